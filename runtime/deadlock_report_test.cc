// Copyright 2026 The Spindle Authors.
//
// --fiber_deadlock_report_s: a cycle of fibers waiting on each other's Mutexes is
// reported once, naming the fibers, the mutexes and the cycle, with their stacks; a long
// wait on a mutex whose holder waits for something else is not.

#include "runtime/internal/observability/deadlock_report.h"

#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "io/stream.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/metrics.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/mutex.h"
#include "sync/shared_mutex.h"

// The fibers' functions: named and out of line, so the report's stacks show them.
__attribute__((noinline)) void TakeSecondWhileHoldingFirst(spindle::Mutex* first,
                                                           spindle::Mutex* second,
                                                           spindle::Event* holding,
                                                           spindle::Event* other_holding,
                                                           std::atomic<std::uint64_t>* id) {
  id->store(spindle::this_fiber::GetId());
  first->lock();
  holding->Set();
  other_holding->Wait();
  second->lock();  // the other fiber holds it and waits for `first`: a cycle
  second->unlock();
  // `first` is unlocked by the test (which breaks the cycle that way), not here.
}

__attribute__((noinline)) void LockTwice(spindle::Mutex* mutex,
                                         std::atomic<std::uint64_t>* id) {
  id->store(spindle::this_fiber::GetId());
  mutex->lock();
  mutex->lock();  // waits for itself; the test unlocks once for it
  mutex->unlock();
}

namespace spindle {
namespace {

using namespace std::chrono_literals;
using internal::DeadlockScanRounds;
using internal::DeadlocksReported;

// Sets --fiber_deadlock_report_s for one runtime.
class ScopedDeadlockReport {
 public:
  explicit ScopedDeadlockReport(std::uint64_t seconds)
      : before_(FLAGS_fiber_deadlock_report_s) {
    FLAGS_fiber_deadlock_report_s = seconds;
  }
  ~ScopedDeadlockReport() { FLAGS_fiber_deadlock_report_s = before_; }

 private:
  const std::uint64_t before_;
};

// Waits until a report beyond the `before` first ones has been written (a minute at
// most); returns the seconds since `start`.
double WaitForReport(std::uint64_t before, std::chrono::steady_clock::time_point start) {
  const auto deadline = start + 60s;
  while (DeadlocksReported() == before) {
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "no report in a minute";
      break;
    }
    std::this_thread::yield();
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Waits until the monitor has finished `rounds` more rounds (a minute at most).
void WaitRounds(std::uint64_t rounds) {
  const std::uint64_t target = DeadlockScanRounds() + rounds;
  const auto deadline = std::chrono::steady_clock::now() + 60s;
  while (DeadlockScanRounds() < target) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the monitor stopped";
    std::this_thread::yield();
  }
}

std::string Address(const void* p) {
  char text[32];
  std::snprintf(text, sizeof(text), "%p", p);
  return text;
}

TEST(DeadlockReportTest, TwoFibersTakingTwoMutexesInOppositeOrdersAreReportedOnce) {
  ScopedDeadlockReport flag(1);
  testing::ScopedRuntime runtime(2);
  const testing::TestWatchdog watchdog(120s, "TwoFibersTakingTwoMutexes...");
  testing::LogCollector sink;
  const std::uint64_t reported_before = DeadlocksReported();
  Mutex a, b;
  Event a_held, b_held;
  std::atomic<std::uint64_t> first_id{0}, second_id{0};
  const auto start = std::chrono::steady_clock::now();
  Fiber first([&] { TakeSecondWhileHoldingFirst(&a, &b, &a_held, &b_held, &first_id); });
  Fiber second([&] { TakeSecondWhileHoldingFirst(&b, &a, &b_held, &a_held, &second_id); });
  const double seconds = WaitForReport(reported_before, start);
  RecordProperty("seconds_to_report", std::to_string(seconds));
  std::printf("reported %.2f s after the fibers started (--fiber_deadlock_report_s=1)\n",
              seconds);
  const std::string report = sink.text();
  EXPECT_NE(report.find("deadlock: 2 fibers wait for each other's locks"), std::string::npos)
      << report;
  const std::string one = "fiber " + std::to_string(first_id.load()) + " waits for Mutex at " +
                          Address(&b) + " held by fiber " + std::to_string(second_id.load());
  const std::string two = "fiber " + std::to_string(second_id.load()) + " waits for Mutex at " +
                          Address(&a) + " held by fiber " + std::to_string(first_id.load());
  EXPECT_NE(report.find(one), std::string::npos) << one << "\n" << report;
  EXPECT_NE(report.find(two), std::string::npos) << two << "\n" << report;
  EXPECT_NE(report.find("cycle: fiber"), std::string::npos) << report;
  EXPECT_NE(report.find("TakeSecondWhileHoldingFirst"), std::string::npos) << report;
  // Once: more rounds see the same cycle and say nothing.
  WaitRounds(4);
  EXPECT_EQ(DeadlocksReported(), reported_before + 1);
  EXPECT_GE(GetRuntimeMetrics().deadlocks, 1u);
  EXPECT_NE(FormatPrometheus(GetRuntimeMetrics()).find("spindle_deadlocks_total"),
            std::string::npos);
  // Break the cycle: any thread may unlock a Spindle Mutex.
  a.unlock();
  second.join();
  b.unlock();
  first.join();
}

TEST(DeadlockReportTest, AFiberLockingAMutexItHoldsIsACycleOfOne) {
  ScopedDeadlockReport flag(1);
  testing::ScopedRuntime runtime(2);
  const testing::TestWatchdog watchdog(120s, "AFiberLockingAMutexItHoldsIsACycleOfOne");
  testing::LogCollector sink;
  const std::uint64_t reported_before = DeadlocksReported();
  Mutex mutex;
  std::atomic<std::uint64_t> id{0};
  Fiber fiber([&] { LockTwice(&mutex, &id); });
  WaitForReport(reported_before, std::chrono::steady_clock::now());
  const std::string report = sink.text();
  EXPECT_NE(report.find("1 fiber waits for a lock it holds"), std::string::npos) << report;
  EXPECT_NE(report.find("held by fiber " + std::to_string(id.load())), std::string::npos)
      << report;
  mutex.unlock();
  fiber.join();
}

TEST(DeadlockReportTest, ALongWaitOnAHolderThatWaitsForSomethingElseIsNoDeadlock) {
  ScopedDeadlockReport flag(1);
  testing::ScopedRuntime runtime(2);
  const testing::TestWatchdog watchdog(120s, "ALongWaitOnAHolder...");
  const std::uint64_t reported_before = DeadlocksReported();
  // Four holders, each waiting on something that is not a lock: an Event, a timer (it
  // sleeps in a loop), a socket, and nothing (it runs, yielding). Five fibers wait on
  // their locks, one as a writer of a SharedMutex (whose wait re-parks every
  // millisecond) and one as a reader.
  Mutex on_event, on_timer, on_socket, on_cpu;
  SharedMutex shared;
  Event release;
  std::atomic<bool> stop{false};
  std::atomic<int> holding{0};
  int sockets[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sockets), 0);
  std::vector<Fiber> holders;
  holders.emplace_back([&] {
    std::lock_guard<Mutex> lock(on_event);
    std::lock_guard<SharedMutex> exclusive(shared);
    holding.fetch_add(1);
    release.Wait();
  });
  holders.emplace_back([&] {
    std::lock_guard<Mutex> lock(on_timer);
    holding.fetch_add(1);
    while (!stop.load()) this_fiber::SleepFor(20ms);
  });
  holders.emplace_back([&] {
    std::lock_guard<Mutex> lock(on_socket);
    auto stream = io::Stream::Adopt(sockets[0], io::Address());
    ASSERT_TRUE(stream.ok());
    holding.fetch_add(1);
    char byte;
    EXPECT_TRUE(stream->Read(&byte, 1).ok());
  });
  holders.emplace_back([&] {
    std::lock_guard<Mutex> lock(on_cpu);
    holding.fetch_add(1);
    while (!stop.load()) this_fiber::Yield();
  });
  while (holding.load() < 4) std::this_thread::yield();
  std::vector<Fiber> waiters;
  for (Mutex* mutex : {&on_event, &on_timer, &on_socket, &on_cpu}) {
    waiters.emplace_back([mutex] { std::lock_guard<Mutex> lock(*mutex); });
  }
  waiters.emplace_back([&] { std::lock_guard<SharedMutex> lock(shared); });
  waiters.emplace_back([&] { std::shared_lock<SharedMutex> lock(shared); });
  // Every waiter parked on its lock (the SharedMutex writer between its re-parks, too).
  for (;;) {
    std::set<const void*> locks;
    for (const auto& wait : internal::ScanLockWaits()) locks.insert(wait.lock);
    if (locks.size() == 5) break;
    WaitRounds(1);
  }
  // Five rounds, 0.5 s apart: the waits pass 1 s and are seen twice more.
  WaitRounds(5);
  EXPECT_EQ(DeadlocksReported(), reported_before);
  release.Set();
  stop.store(true);
  ASSERT_EQ(write(sockets[1], "x", 1), 1);
  for (Fiber& holder : holders) holder.join();
  for (Fiber& waiter : waiters) waiter.join();
  close(sockets[1]);
}

TEST(DeadlockReportTest, CyclesOfTheWaitForGraph) {
  using internal::LockWait;
  using internal::WaitKind;
  int locks[4];
  auto wait = [&](std::uint64_t fiber, int lock, std::uint64_t holder, double seconds) {
    return LockWait{fiber, WaitKind::kMutex, &locks[lock], holder, seconds};
  };
  // 5 -> 7 -> 9 -> 5 is a cycle; 3 waits on it from outside; 11 -> 12 is a chain to a
  // running holder.
  const std::vector<LockWait> waits = {wait(7, 1, 9, 5), wait(3, 0, 5, 5), wait(9, 2, 5, 5),
                                       wait(5, 0, 7, 5), wait(11, 3, 12, 5)};
  auto cycles = internal::FindLockCycles(waits, 2.0);
  ASSERT_EQ(cycles.size(), 1u);
  ASSERT_EQ(cycles[0].size(), 3u);
  EXPECT_EQ(cycles[0][0].fiber, 5u);
  EXPECT_EQ(cycles[0][1].fiber, 7u);
  EXPECT_EQ(cycles[0][2].fiber, 9u);
  EXPECT_NE(internal::DescribeLockCycle(cycles[0])
                .find("cycle: fiber 5 -> fiber 7 -> fiber 9 -> fiber 5"),
            std::string::npos);
  // A member that has not waited long enough breaks it.
  std::vector<LockWait> young = waits;
  young[2].seconds = 1.0;
  EXPECT_TRUE(internal::FindLockCycles(young, 2.0).empty());
}

TEST(DeadlockReportTest, TheFlagIsRangeChecked) {
  internal::RuntimeOptions options;
  options.deadlock_report = std::chrono::seconds(86401);
  EXPECT_EQ(internal::ValidateRuntimeOptions(options),
            "--fiber_deadlock_report_s=86401 is invalid: expected seconds in [0, 86400] "
            "(0 = off)");
  options.deadlock_report = std::chrono::seconds(86400);
  EXPECT_EQ(internal::ValidateRuntimeOptions(options), "");
}

}  // namespace
}  // namespace spindle
