// Copyright 2026 The Spindle Authors.
//
// The embedding example: a program in its own Bazel workspace that uses Spindle's
// public headers and the single target @spindle//:spindle. Starts the runtime, runs a
// thousand fibers that sleep and update a counter under a fiber Mutex, and checks the
// sum. Exits 0 when it is right.

#include <chrono>
#include <cstdio>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "runtime/runtime.h"
#include "sync/mutex.h"

int main(int argc, char** argv) {
  gflags::ParseCommandLineFlags(&argc, &argv, true);  // --fiber_* flags, --flagfile
  spindle::StartRuntime();
  constexpr int kFibers = 1000;
  const long sum = spindle::RunAsFiber([] {
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
  });
  spindle::TerminateRuntime();
  const long expected = static_cast<long>(kFibers) * (kFibers + 1) / 2;
  std::printf("hello_spindle: %d fibers summed to %ld (expected %ld)\n", kFibers, sum,
              expected);
  return sum == expected ? 0 : 1;
}
