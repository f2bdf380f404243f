// Copyright 2026 The Spindle Authors.
//
// Synchronization benchmarks. Run with -c opt:
//   ./bazelw run -c opt //sync:sync_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
//   BM_Uncontended<M>/T      lock + unlock on one thread, ns; T = 1: another thread
//                            exists (glibc's std::mutex skips its atomics while a
//                            process is single-threaded, T = 0; a process running
//                            fibers never is)
//   BM_Contended64Fibers<M>  64 fibers x 100k lock/increment/unlock on 2 workers, ns per
//                            lock (goal <= 16; Go 16, std::mutex 25, Boost.Fiber 103);
//                            M = spindle::Mutex, std::mutex, absl::Mutex
//   BM_CvPingPong            two fibers on different workers alternating through one
//                            Mutex + ConditionVariable, us per round trip
//   BM_ThenChain             1000 continuations attached, then the value set: ns per
//                            continuation run
//   BM_AsyncBlockingGet      Async(f) + BlockingGet from a fiber, us per round

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "fiber/async.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/this_fiber.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/internal/testing/runtime_testing.h"
#include "runtime/runtime.h"
#include "sync/condition_variable.h"
#include "sync/event.h"
#include "sync/future.h"
#include "sync/mutex.h"

namespace spindle {
namespace {

class BenchRuntime {
 public:
  BenchRuntime(std::size_t workers, std::size_t group_size = 0) {
    FLAGS_fiber_concurrency = workers;
    FLAGS_fiber_scheduling_group_size = group_size;
    StartRuntime();
  }
  ~BenchRuntime() { TerminateRuntime(); }
};

// absl::Mutex of this abseil release spells it Lock()/Unlock().
class AbslMutex {
 public:
  void lock() { mutex_.Lock(); }
  void unlock() { mutex_.Unlock(); }

 private:
  absl::Mutex mutex_;
};

template <class M>
void BM_Uncontended(benchmark::State& state) {
  std::mutex park_lock;
  std::condition_variable park;
  bool done = false;
  std::thread other;
  if (state.range(0) == 1) {
    other = std::thread([&] {
      std::unique_lock<std::mutex> lock(park_lock);
      park.wait(lock, [&] { return done; });
    });
  }
  M mutex;
  for (auto _ : state) {
    mutex.lock();
    benchmark::ClobberMemory();
    mutex.unlock();
  }
  if (other.joinable()) {
    {
      std::lock_guard<std::mutex> lock(park_lock);
      done = true;
    }
    park.notify_one();
    other.join();
  }
}
BENCHMARK_TEMPLATE(BM_Uncontended, Mutex)->Arg(0)->Arg(1);
BENCHMARK_TEMPLATE(BM_Uncontended, std::mutex)->Arg(0)->Arg(1);
BENCHMARK_TEMPLATE(BM_Uncontended, AbslMutex)->Arg(0)->Arg(1);

template <class M>
void BM_Contended64Fibers(benchmark::State& state) {
  BenchRuntime runtime(2);
  constexpr int kFibers = 64;
  constexpr int kLocks = 100000;
  for (auto _ : state) {
    M mutex;
    long counter = 0;
    RunAsFiber([&] {
      std::vector<Fiber> fibers;
      for (int f = 0; f < kFibers; ++f) {
        fibers.emplace_back([&] {
          for (int i = 0; i < kLocks; ++i) {
            mutex.lock();
            ++counter;
            mutex.unlock();
          }
        });
      }
      for (auto& f : fibers) f.join();
    });
    if (counter != long{kFibers} * kLocks) state.SkipWithError("lost increments");
  }
  state.counters["ns_per_lock"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kFibers * kLocks,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_TEMPLATE(BM_Contended64Fibers, Mutex)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK_TEMPLATE(BM_Contended64Fibers, std::mutex)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();
BENCHMARK_TEMPLATE(BM_Contended64Fibers, AbslMutex)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

void BM_CvPingPong(benchmark::State& state) {
  BenchRuntime runtime(2, 1);  // two groups of one worker: the fibers never share one
  constexpr int kRounds = 20000;
  for (auto _ : state) {
    Mutex mutex;
    ConditionVariable cv;
    int turn = 0;
    Fiber::Attributes on_a, on_b;
    on_a.scheduling_group = 0;
    on_a.scheduling_group_local = true;
    on_b.scheduling_group = 1;
    on_b.scheduling_group_local = true;
    auto player = [&](int me) {
      for (int i = 0; i < kRounds; ++i) {
        std::unique_lock<Mutex> lock(mutex);
        cv.wait(lock, [&] { return turn == me; });
        turn = 1 - me;
        cv.notify_one();
      }
    };
    Fiber a(on_a, [&] { player(0); });
    Fiber b(on_b, [&] { player(1); });
    a.join();
    b.join();
  }
  state.counters["us_per_round_trip"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRounds * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_CvPingPong)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ThenChain(benchmark::State& state) {
  constexpr int kLinks = 1000;
  for (auto _ : state) {
    Promise<int> promise;
    Future<int> future = promise.GetFuture();
    for (int i = 0; i < kLinks; ++i) future = std::move(future).Then([](int v) { return v + 1; });
    promise.SetValue(0);
    if (BlockingGet(std::move(future)) != kLinks) state.SkipWithError("wrong chain result");
  }
  state.counters["ns_per_continuation"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kLinks,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_ThenChain)->Unit(benchmark::kMicrosecond);

void BM_AsyncBlockingGet(benchmark::State& state) {
  BenchRuntime runtime(2);
  constexpr int kRounds = 10000;
  for (auto _ : state) {
    const long sum = RunAsFiber([] {
      long total = 0;
      for (int i = 0; i < kRounds; ++i) total += BlockingGet(Async([i] { return long{i}; }));
      return total;
    });
    if (sum != long{kRounds} * (kRounds - 1) / 2) state.SkipWithError("wrong sum");
  }
  state.counters["us_per_round"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kRounds * 1e-6,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK(BM_AsyncBlockingGet)->Unit(benchmark::kMillisecond)->UseRealTime();

// How soon a cancellation arrives: N fibers (2 workers) park in Event::WaitUntil (an
// hour away) in one execution context; once every one is parked (as the fiber dump
// sees it), Cancel() is called and timed until the last waiter has returned (manual
// time: the iteration's figure is that span). Counters: the first and the last
// waiter's return after Cancel(), in microseconds.
void BM_CancelParkedWaiters(benchmark::State& state) {
  BenchRuntime runtime(2);
  const int n = static_cast<int>(state.range(0));
  double first_us = 0, last_us = 0;
  for (auto _ : state) {
    auto context = ExecutionContext::Create();
    Event never;
    std::vector<std::atomic<std::uint64_t>> ids(n);
    std::vector<std::chrono::steady_clock::time_point> returned(n);
    std::vector<Fiber> fibers;
    fibers.reserve(n);
    for (int i = 0; i < n; ++i) {
      fibers.emplace_back([&, i] {
        ScopedExecutionContext scope(context);
        ids[i].store(this_fiber::GetId(), std::memory_order_release);
        never.WaitUntil(std::chrono::steady_clock::now() + std::chrono::hours(1));
        returned[i] = std::chrono::steady_clock::now();
      });
    }
    for (int i = 0; i < n; ++i) {
      // acquire: pairs with the waiter's store, made before its wait.
      while (ids[i].load(std::memory_order_acquire) == 0) std::this_thread::yield();
      if (!testing::WaitUntilWaitingIn(ids[i].load(std::memory_order_relaxed),
                                       internal::WaitKind::kEvent)) {
        state.SkipWithError("a waiter never parked");
      }
    }
    const auto cancel = std::chrono::steady_clock::now();
    context->Cancel();
    for (Fiber& fiber : fibers) fiber.join();
    const auto [first, last] = std::minmax_element(returned.begin(), returned.end());
    const double span = std::chrono::duration<double>(*last - cancel).count();
    state.SetIterationTime(span);
    first_us += std::chrono::duration<double, std::micro>(*first - cancel).count();
    last_us += span * 1e6;
  }
  state.counters["first_us"] = first_us / static_cast<double>(state.iterations());
  state.counters["last_us"] = last_us / static_cast<double>(state.iterations());
}
BENCHMARK(BM_CancelParkedWaiters)->Arg(1)->Arg(64)->UseManualTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace spindle

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  FLAGS_minloglevel = 1;
  google::InitGoogleLogging(argv[0]);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
