// Copyright 2026 The Spindle Authors.
//
// Workloads of the synchronization primitives and timers: a contended Mutex, many
// sleeping fibers, timers armed and cancelled, deadline waits that are notified, and
// the memory of fibers parked on one Event.

#include <atomic>
#include <chrono>
#include <memory>
#include <optional>
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
#include "timer/timer.h"

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

std::vector<Metric> RunTimerChurn(double scale) {
  // The shape of the Go peer's timer_churn: 1000 fibers, each arming a timer an hour
  // away and cancelling it, 1000 times (an RPC deadline that the answer beats).
  constexpr int kFibers = 1000;
  const std::int64_t pairs_each = Scaled(1000, scale);
  std::atomic<std::int64_t> fired{0};         // relaxed: read after done.wait()
  std::atomic<std::int64_t> not_prevented{0};  // relaxed: as above
  Latch done(kFibers);
  Stopwatch watch;
  RunAsFiber([&] {
    for (int i = 0; i < kFibers; ++i) {
      StartFiberDetached([&] {
        for (std::int64_t n = 0; n < pairs_each; ++n) {
          const std::uint64_t id =
              SetTimer(std::chrono::steady_clock::now() + std::chrono::hours(1),
                       [&fired] { fired.fetch_add(1, std::memory_order_relaxed); });
          if (!KillTimer(id)) not_prevented.fetch_add(1, std::memory_order_relaxed);
        }
        done.count_down();
      });
    }
    done.wait();
  });
  const double seconds = watch.Seconds();
  if (fired.load() != 0 || not_prevented.load() != 0) {
    Fail("timer_churn", std::to_string(fired.load()) + " cancelled timers fired, " +
                            std::to_string(not_prevented.load()) +
                            " KillTimer calls found their timer already started");
  }
  return {{"per_pair", seconds * 1e9 / static_cast<double>(kFibers * pairs_each), "ns"}};
}

std::vector<Metric> RunDeadlineWait(double scale) {
  // Pairs of fibers; in each round one waits on an Event with a deadline a second away
  // and the other sets it, then the roles swap on a second Event (so each side parks
  // with a deadline that the other cancels by notifying). Two slots of Events per pair,
  // re-made by the setter once both sides are done with them.
  constexpr int kPairs = 16;
  const std::int64_t rounds = Scaled(10000, scale);
  constexpr auto kDeadline = std::chrono::seconds(1);
  struct Slot {
    std::optional<Event> to_waiter;  // set by the setter, waited on by the waiter
    std::optional<Event> to_setter;  // set by the waiter, waited on by the setter
  };
  struct Pair {
    Slot slots[2];
  };
  auto pairs = std::make_unique<Pair[]>(kPairs);
  for (int p = 0; p < kPairs; ++p) {
    for (Slot& slot : pairs[p].slots) {
      slot.to_waiter.emplace();
      slot.to_setter.emplace();
    }
  }
  std::atomic<std::int64_t> timed_out{0};  // relaxed: read after done.wait()
  Latch done(2 * kPairs);
  Stopwatch watch;
  RunAsFiber([&] {
    for (int p = 0; p < kPairs; ++p) {
      Pair& pair = pairs[p];
      StartFiberDetached([&pair, &timed_out, &done, rounds, kDeadline] {  // the waiter
        for (std::int64_t r = 0; r < rounds; ++r) {
          Slot& slot = pair.slots[r % 2];
          if (!slot.to_waiter->WaitUntil(std::chrono::steady_clock::now() + kDeadline)) {
            timed_out.fetch_add(1, std::memory_order_relaxed);
          }
          slot.to_setter->Set();
        }
        done.count_down();
      });
      StartFiberDetached([&pair, &timed_out, &done, rounds, kDeadline] {  // the setter
        for (std::int64_t r = 0; r < rounds; ++r) {
          Slot& slot = pair.slots[r % 2];
          slot.to_waiter->Set();
          if (!slot.to_setter->WaitUntil(std::chrono::steady_clock::now() + kDeadline)) {
            timed_out.fetch_add(1, std::memory_order_relaxed);
          }
          // Both sides are done with this slot: the waiter returned from its wait
          // before its Set(), whose end the Event's destructor waits for. The waiter
          // reaches this slot again only after our next-but-one Set().
          slot.to_waiter.emplace();
          slot.to_setter.emplace();
        }
        done.count_down();
      });
    }
    done.wait();
  });
  const double seconds = watch.Seconds();
  if (timed_out.load() != 0) {
    Fail("deadline_wait", std::to_string(timed_out.load()) +
                              " waits timed out although their Event was set");
  }
  return {{"round_trip", seconds * 1e9 / static_cast<double>(kPairs * rounds), "ns"}};
}

std::vector<Metric> RunParkedMemory(double scale) {
  const std::int64_t count = Scaled(100000, scale);
  Event go;
  Latch parked(count);
  Latch woke(count);
  std::vector<char> resumed(static_cast<std::size_t>(count), 0);
  const std::int64_t rss_before = ResidentBytes();
  Stopwatch wall;
  for (auto& mark : resumed) {
    StartFiberDetached([&] {
      parked.count_down();
      go.Wait();
      mark = 1;
      woke.count_down();
    });
  }
  parked.wait();
  // Not in the wall time: reading RSS walks the process's page tables.
  const double parked_s = wall.Seconds();
  const std::int64_t rss_parked = ResidentBytes();
  Stopwatch waking;
  go.Set();
  woke.wait();
  // From the first start to the last exit, as Go's parked_memory_wall.
  const double wall_ms = (parked_s + waking.Seconds()) * 1e3;
  for (std::size_t i = 0; i < resumed.size(); ++i) {
    if (!resumed[i]) Fail("parked_memory", "fiber " + std::to_string(i) + " never resumed");
  }
  const double kib_per_1000 =
      static_cast<double>(rss_parked - rss_before) / 1024.0 / static_cast<double>(count) * 1000.0;
  // The burst is over: what it left behind is given back after --fiber_release_delay_ms
  // (stack_allocator.h, default 1 s) by rounds a delay apart. Wait for RSS to settle
  // (unchanged for 2.5 s, or under 10 MiB above the start and unchanged for 100 ms; at
  // most 10 s) and report what stays.
  std::int64_t rss_after = ResidentBytes();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto steady_since = std::chrono::steady_clock::now();
  for (std::int64_t previous = -1; std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    rss_after = ResidentBytes();
    const auto now = std::chrono::steady_clock::now();
    if (rss_after != previous) steady_since = now;
    if (rss_after == previous && (rss_after - rss_before < (10 << 20) ||
                                  now - steady_since >= std::chrono::milliseconds(2500))) {
      break;
    }
    previous = rss_after;
  }
  return {{"rss_per_1000_parked", kib_per_1000, "KiB"},
          {"rss_retained_after", static_cast<double>(rss_after - rss_before) / 1024.0, "KiB"},
          {"wall", wall_ms, "ms"}};
}

}  // namespace bench
}  // namespace spindle
