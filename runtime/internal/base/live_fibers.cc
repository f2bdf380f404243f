// Copyright 2026 The Spindle Authors.
//
// Counting live fibers (live_fibers.h): started minus finished, for
// GetFiberCount() and for TerminateRuntime(), which waits until it is 0.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

#include "runtime/internal/base/live_fibers.h"

#include "absl/base/thread_annotations.h"
#include "fiber/internal/os_mutex.h"

namespace spindle::internal {
namespace {

// Live fibers = fibers started - fibers finished, each counted per thread so that the
// hot paths never share a cache line: a start bumps the starting thread's counter, a
// finish the counter of the thread that recycles the fiber. Counters of exited threads
// are folded into `retired`. Reading: all finish counters first, then all start
// counters. Every fiber's start happens-before its finish, and a child's start before
// its parent's finish, so any finish seen is matched by a start seen, and
// started == finished means no fiber that was alive at the reading is still alive.
struct FiberCounters {
  // relaxed increments by the owning thread; acquire/release publish them to readers
  // (release on the increment, acquire in the sum).
  std::atomic<std::uint64_t> started{0};
  std::atomic<std::uint64_t> finished{0};
};

class FiberCounterRegistry {
 public:
  void Add(FiberCounters* counters) {
    OsMutexGuard lock(lock_);
    live_.push_back(counters);
  }
  void Remove(FiberCounters* counters) {
    OsMutexGuard lock(lock_);
    retired_started_ += counters->started.load(std::memory_order_acquire);
    retired_finished_ += counters->finished.load(std::memory_order_acquire);
    live_.erase(std::find(live_.begin(), live_.end(), counters));
  }
  std::size_t Live() {
    OsMutexGuard lock(lock_);
    std::uint64_t finished = retired_finished_;
    for (FiberCounters* c : live_) finished += c->finished.load(std::memory_order_acquire);
    std::uint64_t started = retired_started_;
    for (FiberCounters* c : live_) started += c->started.load(std::memory_order_acquire);
    return static_cast<std::size_t>(started - finished);
  }

 private:
  OsMutex lock_;
  std::vector<FiberCounters*> live_ ABSL_GUARDED_BY(lock_);
  std::uint64_t retired_started_ ABSL_GUARDED_BY(lock_) = 0;
  std::uint64_t retired_finished_ ABSL_GUARDED_BY(lock_) = 0;
};

FiberCounterRegistry& Registry() {
  static auto* registry = new FiberCounterRegistry;
  return *registry;
}

FiberCounters& ThisThreadCounters() {
  struct Holder {
    FiberCounters counters;
    Holder() { Registry().Add(&counters); }
    ~Holder() { Registry().Remove(&counters); }
  };
  thread_local Holder holder;
  return holder.counters;
}

}  // namespace

std::size_t GetLiveFiberCount() { return Registry().Live(); }

void CountFiberFinished() {
  std::atomic<std::uint64_t>& finished = ThisThreadCounters().finished;
  // release: publishes the finish (and all the fiber did) to Live()'s acquire loads.
  // Single writer, so load + store is enough and avoids a locked instruction.
  finished.store(finished.load(std::memory_order_relaxed) + 1, std::memory_order_release);
}

void PrepareThisThreadFiberCounters() { ThisThreadCounters(); }

void CountFiberStarted(std::size_t n) {
  std::atomic<std::uint64_t>& started = ThisThreadCounters().started;
  // release: pairs with Live()'s acquire loads. Single writer: see CountFiberFinished().
  started.store(started.load(std::memory_order_relaxed) + n, std::memory_order_release);
}

void WaitUntilNoLiveFibers() {
  while (!WaitUntilNoLiveFibersFor(std::chrono::hours(1))) {
  }
}

bool WaitUntilNoLiveFibersFor(std::chrono::milliseconds timeout) {
  // Termination is rare and not latency-sensitive: poll with a growing pause rather than
  // make every fiber exit check for a waiter.
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  auto pause = std::chrono::microseconds(50);
  while (GetLiveFiberCount() != 0) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::microseconds>(pause * 2, std::chrono::milliseconds(5));
  }
  return true;
}

}  // namespace spindle::internal
