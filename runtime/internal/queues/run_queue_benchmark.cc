// Copyright 2026 The Spindle Authors.
//
// RunQueue benchmarks. Run with -c opt:
//   ./bazelw run -c opt //runtime/internal/queues:run_queue_benchmark --
//       --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
// (one command line).
// Every case runs on RunQueue and, as the baseline in the same binary, on a
// std::mutex + std::deque queue with the same interface and the same capacity.
// items_per_second counts entries pushed (and popped). ProducerConsumer needs two idle
// cores to mean anything; on a loaded machine its threads take turns on one core.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>

#include "benchmark/benchmark.h"
#include "fiber/internal/spinlock.h"
#include "runtime/internal/queues/run_queue.h"

namespace spindle::internal {
namespace {

constexpr std::size_t kCapacity = 1024;

// glibc elides the lock prefix of its mutex while the process has a single thread,
// which would flatter the baseline in the single-thread cases; a run queue is always
// shared by threads. Once a thread has existed, the process counts as multi-threaded.
const bool kProcessIsMultiThreaded = [] {
  std::thread([] {}).join();
  return true;
}();

// The baseline: what a run queue looks like without a lock-free algorithm.
class MutexDequeQueue {
 public:
  explicit MutexDequeQueue(std::size_t capacity) : capacity_(capacity) {}

  bool Push(std::uintptr_t entry, bool /*stealable*/) {
    std::lock_guard<std::mutex> lock(lock_);
    if (entries_.size() >= capacity_) return false;
    entries_.push_back(entry);
    return true;
  }

  bool BatchPush(const std::uintptr_t* entries, std::size_t n, bool /*stealable*/) {
    std::lock_guard<std::mutex> lock(lock_);
    if (entries_.size() + n > capacity_) return false;
    entries_.insert(entries_.end(), entries, entries + n);
    return true;
  }

  std::uintptr_t Pop() {
    std::lock_guard<std::mutex> lock(lock_);
    if (entries_.empty()) return 0;
    const std::uintptr_t entry = entries_.front();
    entries_.pop_front();
    return entry;
  }

 private:
  const std::size_t capacity_;
  std::mutex lock_;
  std::deque<std::uintptr_t> entries_;  // guarded by lock_
};

template <typename Queue>
void BM_PushPop(benchmark::State& state) {
  Queue queue(kCapacity);
  for (auto _ : state) {
    queue.Push(1, /*stealable=*/true);
    benchmark::DoNotOptimize(queue.Pop());
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK_TEMPLATE(BM_PushPop, RunQueue);
BENCHMARK_TEMPLATE(BM_PushPop, MutexDequeQueue);

template <typename Queue>
void BM_BatchPush8Pop8(benchmark::State& state) {
  Queue queue(kCapacity);
  const std::uintptr_t batch[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  for (auto _ : state) {
    queue.BatchPush(batch, 8, /*stealable=*/true);
    for (int i = 0; i < 8; ++i) benchmark::DoNotOptimize(queue.Pop());
  }
  state.SetItemsProcessed(state.iterations() * 8);
}
BENCHMARK_TEMPLATE(BM_BatchPush8Pop8, RunQueue);
BENCHMARK_TEMPLATE(BM_BatchPush8Pop8, MutexDequeQueue);

// Spins while `attempt` fails (full or empty), yielding now and then so that the run
// still finishes when both threads share one core.
template <typename Attempt>
void RetryUntil(Attempt attempt) {
  for (int failures = 1; !attempt(); ++failures) {
    if (failures % 64 == 0) {
      std::this_thread::yield();
    } else {
      CpuRelax();
    }
  }
}

// Thread 0 pushes one entry per iteration, thread 1 pops one; both run the same number
// of iterations, so the shared queue is empty again when a run ends.
template <typename Queue>
void BM_ProducerConsumer(benchmark::State& state) {
  static Queue queue(kCapacity);
  if (state.thread_index() == 0) {
    for (auto _ : state) RetryUntil([] { return queue.Push(1, /*stealable=*/true); });
    state.SetItemsProcessed(state.iterations());
  } else {
    for (auto _ : state) RetryUntil([] { return queue.Pop() != 0; });
  }
}
BENCHMARK_TEMPLATE(BM_ProducerConsumer, RunQueue)->Threads(2)->UseRealTime();
BENCHMARK_TEMPLATE(BM_ProducerConsumer, MutexDequeQueue)->Threads(2)->UseRealTime();

}  // namespace
}  // namespace spindle::internal
