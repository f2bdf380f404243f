// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_METRICS_H_
#define SPINDLE_RUNTIME_INTERNAL_METRICS_H_

// The metrics core: counters that threads bump without sharing a cache line, and
// log-bucketed histograms (the latency stamps use fiber/internal/cycle_clock.h). The
// runtime's own figures (runtime/metrics.h) are built from these.
//
// Why per-thread cells. A counter bumped by many threads with a locked
// read-modify-write bounces its cache line between them (the figure that
// matters on a 16-core server is that line's round trip, not the add). Here
// every thread owns a row of cells; a counter is a column (a slot number).
// Bumping it is a relaxed load and a relaxed store on the calling thread's own
// cell: no locked instruction, no line shared with another writer. Reading sums
// the column over all rows, under the registry's lock, plus what exited threads
// left behind. This is bvar's and folly's ThreadCachedInt's idea; like brpc's
// bvar, a reader sees each cell at some moment, so a sum is a snapshot that may
// lag the writers, never a torn or lost count.
//
// Single-writer cells. Where the writer is known to be one thread (a worker's
// own counters), SingleWriterCounter is the same relaxed load + store on a
// field the owner places on its own cache line.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "fiber/internal/cycle_clock.h"  // CycleClockNow(), for the latency stamps

namespace spindle::internal {

// ---- Counters bumped from any thread.

namespace metrics_internal {
// The calling thread's cell for `slot` (created on first use), or null once the
// thread's thread-local destructors have run.
std::atomic<std::uint64_t>* ThisThreadCell(std::uint32_t slot);
void AddRetired(std::uint32_t slot, std::uint64_t n);
}  // namespace metrics_internal

// Makes the calling thread's cells now (its row, and the cells of the first 512
// counters), so that its first bump, on a hot path, allocates nothing: for a runtime
// thread as it starts (a worker, a timer thread).
void PrepareThisThreadCounters();

// A monotonic counter summed over per-thread cells (see the top of the file).
//
// Thread-safety: Add() from any thread; Read() from any thread (takes the
// registry's lock). Ownership: the counter owns its slot; destroying it frees
// the slot for a later counter (the slot's cells are zeroed before reuse).
// Add() must not race with the destructor.
class ThreadCounter {
 public:
  ThreadCounter();
  ~ThreadCounter();
  ThreadCounter(const ThreadCounter&) = delete;
  ThreadCounter& operator=(const ThreadCounter&) = delete;

  void Add(std::uint64_t n = 1) {
    std::atomic<std::uint64_t>* cell = metrics_internal::ThisThreadCell(slot_);
    if (__builtin_expect(cell == nullptr, 0)) {
      metrics_internal::AddRetired(slot_, n);  // the thread is exiting
      return;
    }
    // relaxed load + store: this thread is the cell's only writer; readers take
    // relaxed snapshots.
    cell->store(cell->load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t Read() const;

 private:
  std::uint32_t slot_;
};

// ---- Counters with one writer.

// A counter written by one thread at a time (the owner places it where no other
// writer shares the line); read by any thread.
class SingleWriterCounter {
 public:
  void Add(std::uint64_t n = 1) {
    // relaxed load + relaxed store, no read-modify-write: one writer. Readers
    // take a relaxed snapshot (a statistic orders nothing).
    value_.store(value_.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
  }
  std::uint64_t Read() const { return value_.load(std::memory_order_relaxed); }

 private:
  std::atomic<std::uint64_t> value_{0};
};

// ---- Log-bucketed histograms.

// Bucket layout shared by every histogram: values 0..3 have a bucket each;
// above that, each power of two [2^k, 2^(k+1)) is split into 4 equal buckets,
// so a bucket's width is at most a quarter of its lower bound (a percentile
// read from it is off by under 25%, under 12.5% when reported at the bucket's
// midpoint). Values of 2^kHistogramMaxLog2 and more share the last bucket.
inline constexpr std::size_t kHistogramSubBuckets = 4;
inline constexpr std::size_t kHistogramMaxLog2 = 46;  // 2^46 ns is about 19.5 hours
inline constexpr std::size_t kHistogramBuckets =
    kHistogramSubBuckets + (kHistogramMaxLog2 - 2) * kHistogramSubBuckets + 1;

inline std::size_t HistogramBucketOf(std::uint64_t value) {
  if (value < kHistogramSubBuckets) return static_cast<std::size_t>(value);
  const std::size_t log2 = 63 - static_cast<std::size_t>(__builtin_clzll(value));
  if (log2 >= kHistogramMaxLog2) return kHistogramBuckets - 1;
  const std::size_t sub = static_cast<std::size_t>(value >> (log2 - 2)) & 3;
  return kHistogramSubBuckets + (log2 - 2) * kHistogramSubBuckets + sub;
}
// The smallest value that falls in `bucket`.
std::uint64_t HistogramBucketLowerBound(std::size_t bucket);

// A snapshot of a histogram: a count per bucket (HistogramBucketOf), their
// total and the sum of the recorded values, in the unit they were recorded in.
// Plain data, copyable.
struct HistogramSnapshot {
  std::vector<std::uint64_t> buckets = std::vector<std::uint64_t>(kHistogramBuckets);
  std::uint64_t count = 0;
  double sum = 0;

  // The value at quantile `q` in [0, 1]: the midpoint of the bucket holding the
  // ceil(q * count)-th smallest value; 0 when empty.
  double Percentile(double q) const;
  double Mean() const { return count == 0 ? 0.0 : sum / static_cast<double>(count); }
  // This minus `earlier` (an older snapshot of the same histogram): what was
  // recorded in between.
  HistogramSnapshot Since(const HistogramSnapshot& earlier) const;
  void MergeFrom(const HistogramSnapshot& other);
};

// A histogram recorded by one thread at a time (a worker's own), read by any.
class SingleWriterHistogram {
 public:
  void Record(std::uint64_t value) {
    buckets_[HistogramBucketOf(value)].Add(1);
    sum_.Add(value);
  }
  // Adds the counts and the sum to `into`.
  void AddTo(HistogramSnapshot& into) const;

 private:
  SingleWriterCounter buckets_[kHistogramBuckets];
  SingleWriterCounter sum_;
};

// ---- Test hooks.
// How many counter slots are in use (tests check that destroyed counters give
// theirs back).
std::size_t ThreadCounterSlotsInUseForTesting();

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_METRICS_H_
