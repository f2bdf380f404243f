// Copyright 2026 The Spindle Authors.
//
// Work stealing on an imbalanced workload. Run with -c opt:
//   ./bazelw run -c opt //runtime/internal:fiber_worker_benchmark --
//       --benchmark_repetitions=10 --benchmark_report_aggregates_only=true
// (one command line).
//
// Two scheduling groups of one worker each (2 workers: the CPUs of a 2-core machine).
// A group-local root fiber in group 0 starts every fiber of a batch from there, so all
// of them are queued in group 0; each burns a fixed amount of CPU. The baseline in the
// same binary is stealing off (no victims: an internal setting, the flag refuses 0);
// the other cases steal every 16 idle rounds (the default) and at every idle round.
// Without stealing group 1's worker idles and the batch takes the time of one core.
// The time is the wall time of a batch (UseRealTime); a loaded machine blurs it.

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>

#include "benchmark/benchmark.h"
#include "fiber/fiber.h"
#include "runtime/internal/runtime_impl.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/runtime.h"

namespace spindle::internal {
namespace {

constexpr int kFibersPerBatch = 2000;
constexpr std::uint32_t kWorkIterations = 20000;  // about 20 us of CPU per fiber

std::uint32_t Burn(std::uint32_t seed) {
  std::uint32_t x = seed;
  for (std::uint32_t i = 0; i < kWorkIterations; ++i) x = x * 1664525u + 1013904223u;
  return x;
}

// One batch: returns when every fiber of it has finished.
void RunBatch() {
  std::mutex lock;
  std::condition_variable cv;
  bool done = false;
  std::atomic<int> left{kFibersPerBatch};
  std::atomic<std::uint32_t> sink{0};
  Fiber::Attributes root;
  root.scheduling_group = 0;
  root.scheduling_group_local = true;  // so the fibers it starts all go to group 0
  StartFiberDetached(root, [&] {
    for (int i = 0; i < kFibersPerBatch; ++i) {
      StartFiberDetached([&, i] {
        // relaxed: only keeps the work from being optimised away.
        sink.fetch_add(Burn(static_cast<std::uint32_t>(i)), std::memory_order_relaxed);
        // acq_rel: the last fiber sees every other's sink update before it signals.
        if (left.fetch_sub(1, std::memory_order_acq_rel) == 1) {
          std::lock_guard<std::mutex> guard(lock);
          done = true;
          cv.notify_one();
        }
      });
    }
  });
  std::unique_lock<std::mutex> guard(lock);
  cv.wait(guard, [&] { return done; });
  benchmark::DoNotOptimize(sink.load(std::memory_order_relaxed));
}

void BM_ImbalancedBatch(benchmark::State& state) {
  RuntimeOptions options = RuntimeOptionsFromFlags();
  options.concurrency = 2;
  options.scheduling_group_size = 1;
  options.work_stealing_ratio = static_cast<std::size_t>(state.range(0));  // 0: off
  Runtime::Start(options);
  std::uint64_t steals = 0;
  for (auto _ : state) RunBatch();
  for (const auto& stats : GetSchedulingGroupStats()) steals += stats.steals_in_same_node;
  Runtime::Terminate();
  state.counters["stolen_per_batch"] =
      benchmark::Counter(static_cast<double>(steals) / static_cast<double>(state.iterations()));
  state.SetItemsProcessed(state.iterations() * kFibersPerBatch);
  state.SetLabel(state.range(0) == 0 ? "stealing off" : "stealing every n idle rounds");
}
BENCHMARK(BM_ImbalancedBatch)
    ->ArgName("steal_every_n")
    ->Arg(0)
    ->Arg(16)
    ->Arg(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace spindle::internal
