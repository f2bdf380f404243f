// Copyright 2026 The Spindle Authors.
//
// Workloads of the scheduler alone: spawning, yielding, waking across workers, fork-join
// trees, and the three shapes of seed 000's scheduler benchmarks.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "benchmarks/workload.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "runtime/runtime.h"
#include "sync/latch.h"
#include "sync/semaphore.h"

namespace spindle {
namespace bench {
namespace {

// The number of fibers in `marks` that did not write 1 into their own slot.
std::int64_t CountUnmarked(const std::vector<char>& marks) {
  return std::count(marks.begin(), marks.end(), 0);
}

// A short fiber of seed 000's benchmarks: yields `yields` times, then records how many
// times it ran into its own slot and counts down `done`.
void ShortFiberBody(int yields, std::int32_t* slot, Latch* done) {
  std::int32_t runs = 0;
  for (int i = 0; i < yields; ++i) {
    this_fiber::Yield();
    ++runs;
  }
  *slot = runs;
  done->count_down();
}

// Checks that every short fiber of `slots` ran its `yields` yields.
void CheckShortFibers(const char* workload, const std::vector<std::int32_t>& slots, int yields) {
  for (std::size_t i = 0; i < slots.size(); ++i) {
    if (slots[i] != yields) {
      Fail(workload, "short fiber " + std::to_string(i) + " yielded " + std::to_string(slots[i]) +
                         " times, expected " + std::to_string(yields));
    }
  }
}

constexpr int kShortFiberYields = 10;

}  // namespace

std::vector<Metric> RunSpawnJoin(double scale) {
  const std::int64_t count = Scaled(1000000, scale);
  std::vector<char> ran(static_cast<std::size_t>(count), 0);
  Stopwatch watch;
  RunAsFiber([&] {
    std::vector<Fiber> fibers;
    fibers.reserve(ran.size());
    for (auto& mark : ran) fibers.emplace_back([&mark] { mark = 1; });
    for (auto& fiber : fibers) fiber.join();
  });
  const double seconds = watch.Seconds();
  if (const std::int64_t missing = CountUnmarked(ran); missing != 0) {
    Fail("spawn_join",
         std::to_string(missing) + " of " + std::to_string(count) + " fibers did not run");
  }
  return {{"per_fiber", seconds * 1e9 / static_cast<double>(count), "ns"}};
}

std::vector<Metric> RunYield(double scale) {
  const std::int64_t yields_each = Scaled(5000000, scale);
  // Which fiber ran last; each fiber counts the turns it finds the other one ran since.
  // Relaxed: both fibers run on the one worker; the atomic only keeps TSan informed.
  std::atomic<int> last{0};
  std::int64_t turns[2] = {0, 0};
  Stopwatch watch;
  RunAsFiber([&] {
    auto body = [&](int me) {
      for (std::int64_t i = 0; i < yields_each; ++i) {
        this_fiber::Yield();
        if (last.load(std::memory_order_relaxed) != me) {
          last.store(me, std::memory_order_relaxed);
          ++turns[me - 1];
        }
      }
    };
    Fiber a([&] { body(1); });
    Fiber b([&] { body(2); });
    a.join();
    b.join();
  });
  const double seconds = watch.Seconds();
  // On one worker two ready fibers alternate: nearly every yield hands over.
  if (turns[0] + turns[1] < yields_each) {
    Fail("yield", "the fibers took " + std::to_string(turns[0] + turns[1]) + " turns in " +
                      std::to_string(2 * yields_each) + " yields; they should alternate");
  }
  return {{"per_switch", seconds * 1e9 / static_cast<double>(2 * yields_each), "ns"}};
}

std::vector<Metric> RunPingPong(double scale) {
  const std::int64_t rounds = Scaled(100000, scale);
  BinarySemaphore to_b(0), to_a(0);
  std::int64_t ball = 0;  // written by b, read by a; ordered by the semaphores
  std::int64_t wrong_round = -1;
  Fiber::Attributes on_a, on_b;
  on_a.scheduling_group = 0;
  on_a.scheduling_group_local = true;
  on_b.scheduling_group = GetSchedulingGroupCount() > 1 ? 1 : 0;
  on_b.scheduling_group_local = true;
  const double cpu_before = ProcessCpuSeconds();
  Stopwatch watch;
  Fiber b(on_b, [&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      to_b.acquire();
      ball = i + 1;
      to_a.release();
    }
  });
  Fiber a(on_a, [&] {
    for (std::int64_t i = 0; i < rounds; ++i) {
      to_b.release();
      to_a.acquire();
      if (ball != i + 1 && wrong_round < 0) wrong_round = i;
    }
  });
  a.join();
  b.join();
  const double seconds = watch.Seconds();
  const double cpu = ProcessCpuSeconds() - cpu_before;
  if (wrong_round >= 0) {
    Fail("pingpong", "round " + std::to_string(wrong_round) + " saw the ball of another round");
  }
  return {{"round_trip", seconds * 1e6 / static_cast<double>(rounds), "us"}, {"cpu", cpu, "s"}};
}

namespace {

std::uint64_t SkynetSum(std::uint64_t first, std::uint64_t leaves) {
  if (leaves == 1) return first;
  const std::uint64_t child_leaves = leaves / 10;
  std::uint64_t sums[10];
  Fiber children[10];
  for (std::uint64_t i = 0; i < 10; ++i) {
    children[i] = Fiber([&sums, i, first, child_leaves] {
      sums[i] = SkynetSum(first + i * child_leaves, child_leaves);
    });
  }
  std::uint64_t sum = 0;
  for (std::uint64_t i = 0; i < 10; ++i) {
    children[i].join();
    sum += sums[i];
  }
  return sum;
}

std::uint64_t FiberFib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t left = 0;
  Fiber child([&left, n] { left = FiberFib(n - 1); });
  const std::uint64_t right = FiberFib(n - 2);
  child.join();
  return left + right;
}

}  // namespace

std::vector<Metric> RunSkynet(double scale) {
  // The tree is 10-ary: round the leaves to a power of ten (1M at scale 1).
  const int depth = std::clamp(static_cast<int>(std::lround(6 + std::log10(scale))), 1, 9);
  std::uint64_t leaves = 1;
  for (int i = 0; i < depth; ++i) leaves *= 10;
  Stopwatch watch;
  const std::uint64_t sum = RunAsFiber([leaves] { return SkynetSum(0, leaves); });
  const double seconds = watch.Seconds();
  const std::uint64_t expected = leaves * (leaves - 1) / 2;  // 499999500000 at 1M
  if (sum != expected) {
    Fail("skynet", "sum of " + std::to_string(leaves) + " leaves is " + std::to_string(sum) +
                       ", expected " + std::to_string(expected));
  }
  return {{"wall", seconds * 1e3, "ms"}};
}

std::vector<Metric> RunFib(double scale) {
  // fib(n) makes about phi^n fibers: scale n by log_phi(scale) (30 at scale 1).
  const double phi = (1 + std::sqrt(5.0)) / 2;
  const int n =
      std::clamp(static_cast<int>(std::lround(30 + std::log(scale) / std::log(phi))), 2, 40);
  Stopwatch watch;
  const std::uint64_t result = RunAsFiber([n] { return FiberFib(n); });
  const double seconds = watch.Seconds();
  std::uint64_t expected = 0, next = 1;  // 832040 for n = 30
  for (int i = 0; i < n; ++i) {
    expected = std::exchange(next, expected + next);
  }
  if (result != expected) {
    Fail("fib", "fib(" + std::to_string(n) + ") = " + std::to_string(result) + ", expected " +
                    std::to_string(expected));
  }
  return {{"wall", seconds * 1e3, "ms"}};
}

std::vector<Metric> RunSingleSpawner(double scale) {
  const std::int64_t count = Scaled(100000, scale);
  std::vector<std::int32_t> runs(static_cast<std::size_t>(count), 0);
  Latch done(count);
  Stopwatch watch;
  RunAsFiber([&] {
    for (auto& slot : runs) {
      StartFiberDetached([&done, &slot] { ShortFiberBody(kShortFiberYields, &slot, &done); });
    }
    done.wait();
  });
  const double seconds = watch.Seconds();
  CheckShortFibers("single_spawner", runs, kShortFiberYields);
  return {{"per_fiber", seconds * 1e9 / static_cast<double>(count), "ns"}};
}

std::vector<Metric> RunSlowThread(double scale) {
  // Few enough short fibers that they could all finish well within the slow fiber's
  // 100 ms on the other workers: short_done shows whether they wait for it.
  const std::int64_t count = Scaled(10000, scale);
  const auto busy_for = std::chrono::duration<double>(0.1 * scale);
  std::vector<std::int32_t> runs(static_cast<std::size_t>(count), 0);
  Latch short_done(count);
  Latch slow_done(1);
  std::uint64_t slow_sum = 0, slow_steps = 0;
  double short_seconds = 0;
  Stopwatch watch;
  RunAsFiber([&] {
    // The slow fiber computes without yielding until its time is up.
    StartFiberDetached([&] {
      const auto until = std::chrono::steady_clock::now() +
                         std::chrono::duration_cast<std::chrono::steady_clock::duration>(busy_for);
      do {
        for (int i = 0; i < 64; ++i) slow_sum += ++slow_steps;
      } while (std::chrono::steady_clock::now() < until);
      slow_done.count_down();
    });
    for (auto& slot : runs) {
      StartFiberDetached(
          [&short_done, &slot] { ShortFiberBody(kShortFiberYields, &slot, &short_done); });
    }
    short_done.wait();
    short_seconds = watch.Seconds();
    slow_done.wait();
  });
  const double seconds = watch.Seconds();
  CheckShortFibers("slow_thread", runs, kShortFiberYields);
  if (slow_sum != slow_steps * (slow_steps + 1) / 2) {
    Fail("slow_thread", "the slow fiber's sum of 1.." + std::to_string(slow_steps) + " is " +
                            std::to_string(slow_sum));
  }
  return {{"short_done", short_seconds * 1e3, "ms"}, {"wall", seconds * 1e3, "ms"}};
}

std::vector<Metric> RunDifferentSpawners(double scale) {
  constexpr int kSpawners = 10;
  const std::int64_t per_spawner = Scaled(10000, scale);
  const std::int64_t count = kSpawners * per_spawner;
  std::vector<std::int32_t> runs(static_cast<std::size_t>(count), 0);
  Latch done(count);
  Latch spawners_done(kSpawners);
  Stopwatch watch;
  RunAsFiber([&] {
    // Detached, not joined: join() would run a spawner that has not started yet inline,
    // one after the other, instead of all at once.
    for (int s = 0; s < kSpawners; ++s) {
      StartFiberDetached([&, s] {
        for (std::int64_t i = s * per_spawner; i < (s + 1) * per_spawner; ++i) {
          std::int32_t* slot = &runs[static_cast<std::size_t>(i)];
          StartFiberDetached([&done, slot] { ShortFiberBody(kShortFiberYields, slot, &done); });
        }
        spawners_done.count_down();
      });
    }
    spawners_done.wait();
    done.wait();
  });
  const double seconds = watch.Seconds();
  CheckShortFibers("different_spawners", runs, kShortFiberYields);
  return {{"per_fiber", seconds * 1e9 / static_cast<double>(count), "ns"}};
}

}  // namespace bench
}  // namespace spindle
