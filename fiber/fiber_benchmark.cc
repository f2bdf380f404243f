// Copyright 2026 The Spindle Authors.
//
// Scheduler benchmarks (issue goals in parentheses; peers measured on the same kind of
// 2-core machine). Run with -c opt:
//   ./bazelw run -c opt //fiber:fiber_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
//   BM_SpawnJoin*      1M empty fibers from one spawner, ns per fiber (<= 100; Go 271)
//   BM_Yield           two fibers yielding on one worker, ns per switch (<= 25; Go 65)
//   BM_PingPong        two fibers on different workers waking each other through the
//                      runtime's park/wake, us per round trip (<= 2) and CPU seconds
//   BM_Skynet          1M leaf fibers, 10-ary tree, ms (<= 60; Go 793)
//   BM_Fib30           fib(30) with a fiber per call, ms (<= 150; Go 1417)
// Each has a std::thread baseline where one makes sense.

#include <time.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "benchmark/benchmark.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/runtime.h"
#include "sync/event.h"

namespace spindle {
namespace {

// Starts a runtime of `workers` workers in groups of `group_size` for one benchmark.
class BenchRuntime {
 public:
  explicit BenchRuntime(std::size_t workers, std::size_t group_size = 0) {
    FLAGS_fiber_concurrency = workers;
    FLAGS_fiber_scheduling_group_size = group_size;
    StartRuntime();
  }
  ~BenchRuntime() { TerminateRuntime(); }
};

double ProcessCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

constexpr int kSpawnCount = 1000000;

// Spawn, run and join 1M empty fibers through Fiber handles, from one spawner fiber.
void BM_SpawnJoinHandles(benchmark::State& state) {
  BenchRuntime runtime(2);
  for (auto _ : state) {
    RunAsFiber([] {
      std::vector<Fiber> fibers;
      fibers.reserve(kSpawnCount);
      for (int i = 0; i < kSpawnCount; ++i) fibers.emplace_back([] {});
      for (auto& f : fibers) f.join();
    });
  }
  state.SetItemsProcessed(state.iterations() * kSpawnCount);
  state.counters["ns_per_fiber"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSpawnCount),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SpawnJoinHandles)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same with detached fibers and one completion event (Go's WaitGroup shape).
void BM_SpawnJoinDetached(benchmark::State& state) {
  BenchRuntime runtime(2);
  for (auto _ : state) {
    RunAsFiber([] {
      std::atomic<int> left{kSpawnCount};
      Event all_done;
      for (int i = 0; i < kSpawnCount; ++i) {
        StartFiberDetached([&] {
          if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) all_done.Set();
        });
      }
      all_done.Wait();
    });
  }
  state.counters["ns_per_fiber"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kSpawnCount),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SpawnJoinDetached)->Unit(benchmark::kMillisecond)->UseRealTime();

// Baseline: std::thread create + join (10k, per thread).
void BM_SpawnJoinStdThread(benchmark::State& state) {
  constexpr int kThreads = 10000;
  for (auto _ : state) {
    for (int i = 0; i < kThreads; ++i) std::thread([] {}).join();
  }
  state.counters["ns_per_thread"] = benchmark::Counter(
      static_cast<double>(state.iterations() * kThreads),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_SpawnJoinStdThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// Two fibers on one worker, each yielding 5M times: 10M switches.
void BM_Yield(benchmark::State& state) {
  BenchRuntime runtime(1);
  constexpr int kYields = 5000000;
  for (auto _ : state) {
    RunAsFiber([] {
      Fiber a([] {
        for (int i = 0; i < kYields; ++i) this_fiber::Yield();
      });
      Fiber b([] {
        for (int i = 0; i < kYields; ++i) this_fiber::Yield();
      });
      a.join();
      b.join();
    });
  }
  state.counters["ns_per_switch"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * 2 * kYields,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_Yield)->Unit(benchmark::kMillisecond)->UseRealTime();

// Baseline: two threads taking turns with sched_yield on one CPU is not comparable;
// the std::thread figure for a switch is the ping-pong below.

constexpr int kRounds = 100000;

// Two fibers pinned to two single-worker groups, waking each other kRounds times.
void BM_PingPong(benchmark::State& state) {
  BenchRuntime runtime(2, 1);
  double cpu = 0;
  for (auto _ : state) {
    std::vector<Event> to_b(kRounds), to_a(kRounds);
    const double cpu_before = ProcessCpuSeconds();
    Fiber::Attributes on_a, on_b;
    on_a.scheduling_group = 0;
    on_a.scheduling_group_local = true;
    on_b.scheduling_group = 1;
    on_b.scheduling_group_local = true;
    Fiber b(on_b, [&] {
      for (int i = 0; i < kRounds; ++i) {
        to_b[i].Wait();
        to_a[i].Set();
      }
    });
    Fiber a(on_a, [&] {
      for (int i = 0; i < kRounds; ++i) {
        to_b[i].Set();
        to_a[i].Wait();
      }
    });
    a.join();
    b.join();
    cpu += ProcessCpuSeconds() - cpu_before;
  }
  state.counters["us_per_round_trip"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRounds * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["cpu_s_per_100k_rounds"] =
      cpu / static_cast<double>(state.iterations());
}
BENCHMARK(BM_PingPong)->Unit(benchmark::kMillisecond)->UseRealTime();

// Baseline: two threads waking each other through a mutex and condition variable.
void BM_PingPongStdThread(benchmark::State& state) {
  for (auto _ : state) {
    std::mutex lock;
    std::condition_variable cv;
    int turn = 0;
    std::thread b([&] {
      for (int i = 0; i < kRounds; ++i) {
        std::unique_lock<std::mutex> guard(lock);
        cv.wait(guard, [&] { return turn == 1; });
        turn = 0;
        cv.notify_all();
      }
    });
    for (int i = 0; i < kRounds; ++i) {
      std::unique_lock<std::mutex> guard(lock);
      turn = 1;
      cv.notify_all();
      cv.wait(guard, [&] { return turn == 0; });
    }
    b.join();
  }
  state.counters["us_per_round_trip"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRounds * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_PingPongStdThread)->Unit(benchmark::kMillisecond)->UseRealTime();

// Skynet: a 10-ary tree of fibers, 1M leaves each returning its number; the sum is
// checked.
std::uint64_t Skynet(std::uint64_t num, std::uint64_t size) {
  if (size == 1) return num;
  const std::uint64_t child_size = size / 10;
  std::uint64_t sums[10];
  Fiber children[10];
  for (int i = 0; i < 10; ++i) {
    children[i] = Fiber([&sums, i, num, child_size] {
      sums[i] = Skynet(num + static_cast<std::uint64_t>(i) * child_size, child_size);
    });
  }
  std::uint64_t total = 0;
  for (int i = 0; i < 10; ++i) {
    children[i].join();
    total += sums[i];
  }
  return total;
}

void BM_Skynet(benchmark::State& state) {
  BenchRuntime runtime(2);
  for (auto _ : state) {
    const std::uint64_t sum = RunAsFiber([] { return Skynet(0, 1000000); });
    if (sum != 499999500000ULL) state.SkipWithError("skynet sum is wrong");
  }
}
BENCHMARK(BM_Skynet)->Unit(benchmark::kMillisecond)->UseRealTime();

// fib(30) with a fiber for every call's fib(n-1); checked against 832040.
std::uint64_t Fib(int n) {
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t left = 0;
  Fiber child([&left, n] { left = Fib(n - 1); });
  const std::uint64_t right = Fib(n - 2);
  child.join();
  return left + right;
}

void BM_Fib30(benchmark::State& state) {
  BenchRuntime runtime(2);
  for (auto _ : state) {
    const std::uint64_t result = RunAsFiber([] { return Fib(30); });
    if (result != 832040) state.SkipWithError("fib(30) is wrong");
  }
}
BENCHMARK(BM_Fib30)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace spindle

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_minloglevel = 1;  // keep the runtime's start-up line out of the table
  google::InitGoogleLogging(argv[0]);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
