// Copyright 2026 The Spindle Authors.
//
// Workloads of the synchronization primitives and timers: a contended Mutex, many
// sleeping fibers, and the memory of fibers parked on one Event.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "benchmarks/workload.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "runtime/runtime.h"
#include "sync/event.h"
#include "sync/latch.h"
#include "sync/mutex.h"

namespace spindle {
namespace bench {

std::vector<Metric> RunMutex(double scale) {
  constexpr int kFibers = 64;
  const std::int64_t locks_each = Scaled(100000, scale);
  Mutex mutex;
  std::int64_t counter = 0;  // guarded by mutex
  Latch done(kFibers);
  Stopwatch watch;
  // Detached fibers and a Latch, not joined handles: join() would run a fiber that has
  // not started yet inline, one after another, and take the contention away.
  for (int i = 0; i < kFibers; ++i) {
    StartFiberDetached([&] {
      for (std::int64_t n = 0; n < locks_each; ++n) {
        mutex.lock();
        ++counter;
        mutex.unlock();
      }
      done.count_down();
    });
  }
  done.wait();
  const double seconds = watch.Seconds();
  mutex.lock();
  const std::int64_t total = counter;
  mutex.unlock();
  if (total != kFibers * locks_each) {
    Fail("mutex", "counter is " + std::to_string(total) + ", expected " +
                      std::to_string(kFibers * locks_each));
  }
  return {{"per_lock", seconds * 1e9 / static_cast<double>(total), "ns"}};
}

std::vector<Metric> RunSleep(double scale) {
  const std::int64_t count = Scaled(100000, scale);
  constexpr auto kSleep = std::chrono::milliseconds(1);
  std::atomic<std::int64_t> oversleep_ns{0};  // relaxed: totals, read after done.wait()
  std::atomic<std::int64_t> early{0};
  std::atomic<std::int64_t> earliest_ns{0};
  Latch done(count);
  Stopwatch watch;
  RunAsFiber([&] {
    for (std::int64_t i = 0; i < count; ++i) {
      StartFiberDetached([&] {
        const auto deadline = std::chrono::steady_clock::now() + kSleep;
        this_fiber::SleepUntil(deadline);
        const std::int64_t late_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                         std::chrono::steady_clock::now() - deadline)
                                         .count();
        if (late_ns < 0) {
          early.fetch_add(1, std::memory_order_relaxed);
          earliest_ns.store(late_ns, std::memory_order_relaxed);
        }
        oversleep_ns.fetch_add(late_ns, std::memory_order_relaxed);
        done.count_down();
      });
    }
    done.wait();
  });
  const double seconds = watch.Seconds();
  if (early.load() != 0) {
    Fail("sleep", std::to_string(early.load()) + " fibers woke early (one by " +
                      std::to_string(-earliest_ns.load()) + " ns)");
  }
  return {{"wall", seconds * 1e3, "ms"},
          {"mean_oversleep",
           static_cast<double>(oversleep_ns.load()) / static_cast<double>(count) / 1e3, "us"}};
}

std::vector<Metric> RunParkedMemory(double scale) {
  const std::int64_t count = Scaled(100000, scale);
  Event go;
  Latch parked(count);
  Latch woke(count);
  std::vector<char> resumed(static_cast<std::size_t>(count), 0);
  const std::int64_t rss_before = ResidentBytes();
  for (auto& mark : resumed) {
    StartFiberDetached([&] {
      parked.count_down();
      go.Wait();
      mark = 1;
      woke.count_down();
    });
  }
  parked.wait();
  const std::int64_t rss_parked = ResidentBytes();
  go.Set();
  woke.wait();
  for (std::size_t i = 0; i < resumed.size(); ++i) {
    if (!resumed[i]) Fail("parked_memory", "fiber " + std::to_string(i) + " never resumed");
  }
  const double kib_per_1000 =
      static_cast<double>(rss_parked - rss_before) / 1024.0 / static_cast<double>(count) * 1000.0;
  // The burst is over: what it left behind is given back after --fiber_release_delay_ms
  // (stack_allocator.h). Wait for RSS to settle (at most 10 s) and report what stays.
  std::int64_t rss_after = ResidentBytes();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (std::int64_t previous = -1; std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss_after = ResidentBytes();
    if (rss_after - rss_before < (10 << 20) && rss_after == previous) break;
    previous = rss_after;
  }
  return {{"rss_per_1000_parked", kib_per_1000, "KiB"},
          {"rss_retained_after", static_cast<double>(rss_after - rss_before) / 1024.0, "KiB"}};
}

}  // namespace bench
}  // namespace spindle
