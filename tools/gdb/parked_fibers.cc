// Copyright 2026 The Spindle Authors.
//
// The program the gdb commands' test (gdb_test.py) looks at: fibers parked in each
// kind of wait, each at a function of its own, five with one identical stack, one
// holding a Mutex others wait on, and one running. Once every one of them is parked
// (the fiber dump says so) it prints one "expect ..." line per fiber kind and "ready",
// then waits for its stdin to close and exits at once (_exit: the fibers stay parked;
// a test process needs no clean shutdown, and a debugger may have looked at it).

#include <sys/prctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "io/stream.h"
#include "runtime/runtime.h"
#include "sync/condition_variable.h"
#include "sync/event.h"
#include "sync/mutex.h"

// Each entry function does something after its wait (no tail call), so its frame is on
// its fiber's stack; noinline, so it has a frame and a symbol of its own.
std::atomic<int> g_after_wait{0};
std::atomic<bool> g_spin{true};

// Called holding another mutex: a chain of owners (GdbParkOnMutex waits for the mutex
// this fiber holds, this one for the one a third fiber holds while it waits on an Event).
__attribute__((noinline)) void GdbParkOnMutexHoldingAnother(spindle::Mutex* mutex) {
  mutex->lock();
  mutex->unlock();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkOnMutex(spindle::Mutex* mutex) {
  mutex->lock();
  mutex->unlock();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkOnConditionVariable(spindle::Mutex* mutex,
                                                          spindle::ConditionVariable* cv) {
  // In memory, so a debug build's `info locals` shows it at any optimization level.
  volatile int rounds = 0;
  std::unique_lock<spindle::Mutex> lock(*mutex);
  while (rounds < 1'000'000) {
    cv->wait(lock);
    rounds = rounds + 1;
  }
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkOnEvent(spindle::Event* event) {
  event->Wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkInSleep() {
  spindle::this_fiber::SleepFor(std::chrono::hours(1));
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkOnSocket(int fd) {
  auto stream = spindle::io::Stream::Adopt(fd, spindle::io::Address());
  if (!stream.ok()) {
    std::fprintf(stderr, "parked_fibers: %s\n", stream.status().ToString().c_str());
    std::_Exit(2);
  }
  char byte;
  (void)stream->Read(&byte, 1);
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbJoinedChild(spindle::Event* started, spindle::Event* go) {
  started->Set();
  go->Wait();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbParkInJoin(spindle::Event* go) {
  // The child must be running before join(), which would otherwise run it inline.
  spindle::Event started;
  spindle::Fiber child([&started, go] { GdbJoinedChild(&started, go); });
  started.Wait();
  child.join();
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

__attribute__((noinline)) void GdbSpin() {
  // relaxed: a flag nobody clears (the process exits with the fiber running).
  while (g_spin.load(std::memory_order_relaxed)) {
    std::this_thread::yield();  // the thread's own yield: the fiber stays Running
  }
  g_after_wait.fetch_add(1, std::memory_order_relaxed);  // relaxed: a side effect only
}

namespace {

// How many fibers the dump shows waiting (one "waiting on" per fiber line).
int WaitingFibers() {
  std::ostringstream dump;
  spindle::DumpFibers(dump);
  const std::string text = dump.str();
  int count = 0;
  for (std::size_t at = text.find("waiting on"); at != std::string::npos;
       at = text.find("waiting on", at + 1)) {
    ++count;
  }
  return count;
}

}  // namespace

int main(int argc, char** argv) {
  // Two workers: one runs GdbSpin, the other everything else.
  gflags::SetCommandLineOptionWithMode("fiber_concurrency", "2", gflags::SET_FLAGS_DEFAULT);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  // Whatever Yama's ptrace_scope, the test's gdb (not our parent) may attach.
  prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
  spindle::StartRuntime();

  static spindle::Mutex mutex, cv_mutex;
  static spindle::ConditionVariable cv;
  static spindle::Event hold, event, child_go;
  static int sockets[2];
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets) != 0) return 2;

  spindle::Event holding;
  spindle::StartFiberDetached([&holding] {
    std::lock_guard<spindle::Mutex> lock(mutex);  // taken before the waiter comes
    holding.Set();
    hold.Wait();
  });
  holding.Wait();
  static spindle::Mutex second;
  spindle::Event second_held;
  spindle::StartFiberDetached([&second_held] {
    second.lock();
    second_held.Set();
    GdbParkOnMutexHoldingAnother(&mutex);  // held by the fiber above
  });
  second_held.Wait();
  spindle::StartFiberDetached([] { GdbParkOnMutex(&second); });
  spindle::StartFiberDetached([] { GdbParkOnConditionVariable(&cv_mutex, &cv); });
  constexpr int kEventFibers = 5;
  for (int i = 0; i < kEventFibers; ++i) {
    spindle::StartFiberDetached([] { GdbParkOnEvent(&event); });
  }
  spindle::StartFiberDetached([] { GdbParkInSleep(); });
  spindle::StartFiberDetached([] { GdbParkOnSocket(sockets[0]); });
  spindle::StartFiberDetached([] { GdbParkInJoin(&child_go); });
  spindle::StartFiberDetached([] { GdbSpin(); });

  // The lambda holding `mutex` (event), the two mutex waiters,
  // the condition variable, the five events, the sleep, the socket, the join and its
  // child (event).
  constexpr int kWaiting = 1 + 1 + 1 + 1 + kEventFibers + 1 + 1 + 1 + 1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(2);
  while (WaitingFibers() < kWaiting) {
    if (std::chrono::steady_clock::now() > deadline) {
      std::fprintf(stderr, "parked_fibers: only %d of %d fibers parked after 2 minutes\n",
                   WaitingFibers(), kWaiting);
      return 2;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  // What the test checks: the state each function's fiber is in, and how many.
  std::printf("expect 1 waiting on mutex :: GdbParkOnMutexHoldingAnother\n");
  std::printf("expect 1 waiting on mutex :: GdbParkOnMutex\n");
  std::printf("expect 1 waiting on condition_variable :: GdbParkOnConditionVariable\n");
  std::printf("expect %d waiting on event :: GdbParkOnEvent\n", kEventFibers);
  std::printf("expect 1 waiting on timer :: GdbParkInSleep\n");
  std::printf("expect 1 waiting on socket :: GdbParkOnSocket\n");
  std::printf("expect 1 waiting on join of fiber :: GdbParkInJoin\n");
  std::printf("expect 1 waiting on event :: GdbJoinedChild\n");
  std::printf("expect 1 running on worker :: GdbSpin\n");
  std::printf("ready %d\n", static_cast<int>(getpid()));
  std::fflush(stdout);
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  std::_Exit(0);
}
