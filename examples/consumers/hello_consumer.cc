// Copyright 2026 The Spindle Authors.
//
// What a service built outside Spindle's tree does first, through the installed headers
// (spindle/...) and one library: start the runtime, run fibers that sleep and take a
// fiber Mutex, hand a value through a Promise/Future, and echo a message through a
// loopback socket with io's Listener and Stream. The three consumer projects beside it
// (add_subdirectory, find_package, pkg_config) build this file; each run prints one
// line and exits 0 when every check holds.

#include <chrono>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gflags/gflags.h"
#include "spindle/fiber/fiber.h"
#include "spindle/fiber/this_fiber.h"
#include "spindle/io/address.h"
#include "spindle/io/stream.h"
#include "spindle/runtime/runtime.h"
#include "spindle/sync/future.h"
#include "spindle/sync/mutex.h"
#include "spindle/version.h"

namespace {

// A thousand fibers add 1..1000 under a fiber Mutex.
long SumUnderMutex() {
  constexpr int kFibers = 1000;
  spindle::Mutex mutex;
  long total = 0;
  std::vector<spindle::Fiber> fibers;
  for (int i = 1; i <= kFibers; ++i) {
    fibers.emplace_back([&mutex, &total, i] {
      spindle::this_fiber::SleepFor(std::chrono::milliseconds(1));
      std::lock_guard<spindle::Mutex> lock(mutex);
      total += i;
    });
  }
  for (auto& fiber : fibers) fiber.join();
  return total;
}

// A fiber fulfils a promise that this one waits on.
int ValueThroughFuture() {
  spindle::Promise<int> promise;
  spindle::Future<int> future = promise.GetFuture();
  spindle::Fiber producer([&promise] { promise.SetValue(42); });
  const int value = spindle::BlockingGet(std::move(future));
  producer.join();
  return value;
}

// A listener on an ephemeral loopback port echoes one message back to a client fiber.
std::string EchoThroughLoopback() {
  auto listener = spindle::io::Listener::Listen(spindle::io::Address::Ipv4Loopback(0));
  if (!listener.ok()) return "listen: " + listener.status().ToString();
  spindle::Fiber server([&listener] {
    auto stream = listener->Accept();
    if (!stream.ok()) return;
    char buffer[5];
    if (stream->ReadFull(buffer, sizeof(buffer)).ok()) {
      (void)stream->WriteAll(buffer, sizeof(buffer));
    }
  });
  std::string echoed = "connect failed";
  auto client = spindle::io::Stream::Connect(listener->address());
  if (client.ok() && client->WriteAll("hello", 5).ok()) {
    char buffer[5];
    echoed = client->ReadFull(buffer, sizeof(buffer)).ok() ? std::string(buffer, 5)
                                                           : "read failed";
  }
  server.join();
  return echoed;
}

}  // namespace

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);  // --fiber_* flags, --flagfile
  spindle::StartRuntime();
  long sum = 0;
  int value = 0;
  std::string echoed;
  spindle::RunAsFiber([&] {
    sum = SumUnderMutex();
    value = ValueThroughFuture();
    echoed = EchoThroughLoopback();
  });
  spindle::TerminateRuntime();
  const bool ok = sum == 500500 && value == 42 && echoed == "hello";
  std::printf("hello_consumer (Spindle %s): sum %ld, future %d, echo \"%s\": %s\n",
              SPINDLE_VERSION_STRING, sum, value, echoed.c_str(), ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}
