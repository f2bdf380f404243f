// Copyright 2026 The Spindle Authors.
//
// What a FiberLocal costs. Run with -c opt:
//   ./bazelw run -c opt //fiber:fiber_local_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
//   BM_ThreadLocalRead      baseline: a thread_local read through an out-of-line
//                           accessor (what a fiber-safe thread_local costs)
//   BM_FiberLocalRead       a FiberLocal<int> read in a fiber (an inline slot)
//   BM_FiberLocalReadOverflow  the same for a key past the five inline slots
//   BM_ExecutionLocalRead   an ExecutionLocal<int> read in an execution context
//   BM_Fib30 / BM_Fib30WithFiberLocal  fib(30) with a fiber per call, without and with
//                           a FiberLocal read per call: the cost on join()'s inline path
//                           (the joiner's values step aside for the child)
// Each read benchmark reports ns per read ("per_read").

#include <cstdint>
#include <memory>
#include <vector>

#include "benchmark/benchmark.h"
#include "fiber/execution_context.h"
#include "fiber/fiber.h"
#include "fiber/fiber_local.h"
#include "gflags/gflags.h"
#include "glog/logging.h"
#include "runtime/internal/runtime_options.h"
#include "runtime/runtime.h"

namespace spindle {
namespace {

constexpr int kReads = 10000000;

class BenchRuntime {
 public:
  explicit BenchRuntime(std::size_t workers) {
    FLAGS_fiber_concurrency = workers;
    StartRuntime();
  }
  ~BenchRuntime() { TerminateRuntime(); }
};

void ReportPerRead(benchmark::State& state) {
  state.counters["per_read"] = benchmark::Counter(
      static_cast<double>(state.iterations()) * kReads,
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

thread_local int tls_value = 0;
__attribute__((noinline)) int* ThreadLocalSlot() {
  int* slot = &tls_value;
  asm volatile("" : "+r"(slot));  // opaque, as a fiber-safe accessor must be
  return slot;
}

void BM_ThreadLocalRead(benchmark::State& state) {
  for (auto _ : state) {
    for (int i = 0; i < kReads; ++i) {
      ++*ThreadLocalSlot();
      benchmark::ClobberMemory();
    }
  }
  ReportPerRead(state);
}
BENCHMARK(BM_ThreadLocalRead)->Unit(benchmark::kMillisecond)->UseRealTime();

template <class Local>
void ReadLoop(Local& local) {
  for (int i = 0; i < kReads; ++i) {
    ++*local.get();
    benchmark::ClobberMemory();
  }
}

void BM_FiberLocalRead(benchmark::State& state) {
  BenchRuntime runtime(1);
  FiberLocal<int> local;
  for (auto _ : state) RunAsFiber([&] { ReadLoop(local); });
  ReportPerRead(state);
}
BENCHMARK(BM_FiberLocalRead)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_FiberLocalReadOverflow(benchmark::State& state) {
  BenchRuntime runtime(1);
  std::vector<std::unique_ptr<FiberLocal<int>>> fillers;
  for (int i = 0; i < 5; ++i) fillers.push_back(std::make_unique<FiberLocal<int>>());
  FiberLocal<int> local;  // index 8 or more
  for (auto _ : state) RunAsFiber([&] { ReadLoop(local); });
  ReportPerRead(state);
}
BENCHMARK(BM_FiberLocalReadOverflow)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ExecutionLocalRead(benchmark::State& state) {
  BenchRuntime runtime(1);
  ExecutionLocal<int> local;
  for (auto _ : state) {
    RunAsFiber([&] {
      ScopedExecutionContext scope(ExecutionContext::Create());
      ReadLoop(local);
    });
  }
  ReportPerRead(state);
}
BENCHMARK(BM_ExecutionLocalRead)->Unit(benchmark::kMillisecond)->UseRealTime();

FiberLocal<std::uint64_t>* fib_calls = nullptr;

template <bool kWithLocal>
std::uint64_t Fib(int n) {
  if (kWithLocal) ++*fib_calls->get();
  if (n < 2) return static_cast<std::uint64_t>(n);
  std::uint64_t left = 0;
  Fiber child([&left, n] { left = Fib<kWithLocal>(n - 1); });
  const std::uint64_t right = Fib<kWithLocal>(n - 2);
  child.join();
  return left + right;
}

template <bool kWithLocal>
void BM_Fib30Variant(benchmark::State& state) {
  BenchRuntime runtime(2);
  FiberLocal<std::uint64_t> calls;
  fib_calls = &calls;
  for (auto _ : state) {
    const std::uint64_t result = RunAsFiber([] { return Fib<kWithLocal>(30); });
    if (result != 832040) state.SkipWithError("fib(30) is wrong");
  }
  fib_calls = nullptr;
}
void BM_Fib30(benchmark::State& state) { BM_Fib30Variant<false>(state); }
void BM_Fib30WithFiberLocal(benchmark::State& state) { BM_Fib30Variant<true>(state); }
BENCHMARK(BM_Fib30)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Fib30WithFiberLocal)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace spindle

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  gflags::ParseCommandLineFlags(&argc, &argv, true);
  google::InitGoogleLogging(argv[0]);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
