// Copyright 2026 The Spindle Authors.

#include "runtime/internal/base/metrics.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/os_mutex.h"
#include "glog/logging.h"

namespace spindle::internal {
namespace {

// Per-thread rows of cells, in chunks allocated on a thread's first touch of a
// slot in that chunk, so a thread that bumps two counters owns two cells' worth
// of chunks, not the whole table.
constexpr std::size_t kChunkSlots = 512;  // 4 KiB of cells
constexpr std::size_t kMaxChunks = 128;   // 65,536 slots
constexpr std::size_t kMaxSlots = kChunkSlots * kMaxChunks;

struct Chunk {
  std::atomic<std::uint64_t> cells[kChunkSlots] = {};
};

struct ThreadRow {
  // Written by the owning thread (a new chunk, release) and read by readers
  // under the registry lock (acquire); a chunk is freed only when the row is
  // retired, under that lock.
  std::atomic<Chunk*> chunks[kMaxChunks] = {};
};

// Rows of live threads, what exited threads left, and the slot allocator.
//
// Thread-safety: every member under `lock_` (an OsMutex, i.e. a std::mutex: Debian's
// abseil is not built for TSan, which would miss an absl::Mutex's ordering).
class Registry {
 public:
  std::uint32_t AllocateSlot() {
    OsMutexGuard lock(lock_);
    std::uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      CHECK(next_ < kMaxSlots) << "more than " << kMaxSlots << " live metric counters";
      slot = next_++;
      retired_.push_back(0);
    }
    // A reused slot starts at 0 in every row: the counter that had it is gone
    // and no thread writes it any more (ThreadCounter's contract).
    retired_[slot] = 0;
    for (ThreadRow* row : rows_) {
      Chunk* chunk = row->chunks[slot / kChunkSlots].load(std::memory_order_acquire);
      if (chunk != nullptr) {
        chunk->cells[slot % kChunkSlots].store(0, std::memory_order_relaxed);
      }
    }
    ++in_use_;
    return slot;
  }
  void FreeSlot(std::uint32_t slot) {
    OsMutexGuard lock(lock_);
    free_.push_back(slot);
    --in_use_;
  }
  std::uint64_t Sum(std::uint32_t slot) {
    OsMutexGuard lock(lock_);
    std::uint64_t sum = retired_[slot];
    for (ThreadRow* row : rows_) {
      // acquire: pairs with the owner's release when it installed the chunk.
      Chunk* chunk = row->chunks[slot / kChunkSlots].load(std::memory_order_acquire);
      // relaxed: a statistic; the cell is a snapshot of its owner's count.
      if (chunk != nullptr)
        sum += chunk->cells[slot % kChunkSlots].load(std::memory_order_relaxed);
    }
    return sum;
  }
  void AddRow(ThreadRow* row) {
    OsMutexGuard lock(lock_);
    rows_.push_back(row);
  }
  // The exiting owner's counts move to `retired_`; the row and its chunks are
  // freed.
  void RetireRow(ThreadRow* row) {
    OsMutexGuard lock(lock_);
    for (std::size_t c = 0; c < kMaxChunks; ++c) {
      Chunk* chunk = row->chunks[c].load(std::memory_order_relaxed);  // our own row
      if (chunk == nullptr) continue;
      for (std::size_t i = 0; i < kChunkSlots && c * kChunkSlots + i < next_; ++i) {
        retired_[c * kChunkSlots + i] += chunk->cells[i].load(std::memory_order_relaxed);
      }
      delete chunk;
    }
    rows_.erase(std::find(rows_.begin(), rows_.end(), row));
    delete row;
  }
  // For a thread whose row is already retired (a counter bumped from a later
  // thread-local destructor): straight into `retired_`.
  void AddRetired(std::uint32_t slot, std::uint64_t n) {
    OsMutexGuard lock(lock_);
    retired_[slot] += n;
  }
  std::size_t in_use() {
    OsMutexGuard lock(lock_);
    return in_use_;
  }

 private:
  OsMutex lock_;
  std::vector<ThreadRow*> rows_ ABSL_GUARDED_BY(lock_);
  std::vector<std::uint64_t> retired_ ABSL_GUARDED_BY(lock_);  // indexed by slot
  std::vector<std::uint32_t> free_ ABSL_GUARDED_BY(lock_);
  std::uint32_t next_ ABSL_GUARDED_BY(lock_) = 0;
  std::size_t in_use_ ABSL_GUARDED_BY(lock_) = 0;
};

Registry& GetRegistry() {
  static auto* registry = new Registry;  // never destroyed: threads may outlive main()
  return *registry;
}

// The calling thread's row: null before its first Add, a live row, or
// kRetiredRow after its thread-local destructor ran.
ThreadRow* const kRetiredRow = reinterpret_cast<ThreadRow*>(alignof(ThreadRow));

// The fast path reads this plain pointer (a live row, or null): a thread_local
// with no destructor needs no initialisation guard, so reading it is one load.
thread_local ThreadRow* tls_live_row = nullptr;

struct RowHolder {
  ThreadRow* row = nullptr;
  ~RowHolder() {
    if (row != nullptr) GetRegistry().RetireRow(row);
    row = kRetiredRow;
    tls_live_row = nullptr;  // later bumps take the slow path, which sees kRetiredRow
  }
};
thread_local RowHolder tls_row;

// The first bump of a thread, or of a slot in a chunk it has not touched yet, or a
// bump from a thread whose thread-local destructors ran (null: add to `retired_`).
__attribute__((noinline)) std::atomic<std::uint64_t>* ThisThreadCellSlow(
    std::uint32_t slot) {
  RowHolder* holder = &tls_row;
  if (holder->row == kRetiredRow) return nullptr;
  if (holder->row == nullptr) {
    holder->row = new ThreadRow;
    GetRegistry().AddRow(holder->row);
    tls_live_row = holder->row;
  }
  const std::size_t index = slot / kChunkSlots;
  Chunk* chunk = holder->row->chunks[index].load(std::memory_order_relaxed);  // ours
  if (chunk == nullptr) {
    chunk = new Chunk;
    // release: pairs with a reader's acquire, so it sees the zeroed cells.
    holder->row->chunks[index].store(chunk, std::memory_order_release);
  }
  return &chunk->cells[slot % kChunkSlots];
}

}  // namespace

namespace metrics_internal {

// Out of line, so that a caller that switches fibers (and so maybe threads)
// between two bumps never reuses the first thread's row (see
// GetCurrentFiberEntity()).
__attribute__((noinline)) std::atomic<std::uint64_t>* ThisThreadCell(std::uint32_t slot) {
  ThreadRow* row = tls_live_row;
  __asm__ __volatile__("" : "+r"(row));  // opaque to the optimiser
  if (__builtin_expect(row != nullptr, 1)) {
    // relaxed: the row's chunks are written by this thread only.
    Chunk* chunk = row->chunks[slot / kChunkSlots].load(std::memory_order_relaxed);
    if (__builtin_expect(chunk != nullptr, 1)) return &chunk->cells[slot % kChunkSlots];
  }
  return ThisThreadCellSlow(slot);
}

void AddRetired(std::uint32_t slot, std::uint64_t n) { GetRegistry().AddRetired(slot, n); }

}  // namespace metrics_internal

void PrepareThisThreadCounters() { ThisThreadCellSlow(0); }

ThreadCounter::ThreadCounter() : slot_(GetRegistry().AllocateSlot()) {}

ThreadCounter::~ThreadCounter() { GetRegistry().FreeSlot(slot_); }

std::uint64_t ThreadCounter::Read() const { return GetRegistry().Sum(slot_); }

std::size_t ThreadCounterSlotsInUseForTesting() { return GetRegistry().in_use(); }

std::uint64_t HistogramBucketLowerBound(std::size_t bucket) {
  if (bucket < kHistogramSubBuckets) return bucket;
  if (bucket >= kHistogramBuckets - 1) return std::uint64_t{1} << kHistogramMaxLog2;
  const std::size_t log2 = (bucket - kHistogramSubBuckets) / kHistogramSubBuckets + 2;
  const std::uint64_t sub = (bucket - kHistogramSubBuckets) % kHistogramSubBuckets;
  return (kHistogramSubBuckets + sub) << (log2 - 2);
}

double HistogramSnapshot::Percentile(double q) const {
  if (count == 0) return 0.0;
  q = std::clamp(q, 0.0, 1.0);
  const auto rank = std::max<std::uint64_t>(
      1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(count))));
  std::uint64_t seen = 0;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    seen += buckets[b];
    if (seen < rank) continue;
    const double low = static_cast<double>(HistogramBucketLowerBound(b));
    const double high = b + 1 < kHistogramBuckets
                            ? static_cast<double>(HistogramBucketLowerBound(b + 1))
                            : low * 2;
    // Values are integers: a bucket [low, high) holds low..high-1.
    return (low + (high - 1)) / 2;
  }
  return static_cast<double>(HistogramBucketLowerBound(kHistogramBuckets - 1));
}

HistogramSnapshot HistogramSnapshot::Since(const HistogramSnapshot& earlier) const {
  HistogramSnapshot delta = *this;
  for (std::size_t b = 0; b < buckets.size(); ++b) {
    // Snapshots are taken bucket by bucket while writers run: never go below 0.
    delta.buckets[b] =
        buckets[b] >= earlier.buckets[b] ? buckets[b] - earlier.buckets[b] : 0;
  }
  delta.count = 0;
  for (std::uint64_t n : delta.buckets) delta.count += n;
  delta.sum = std::max(0.0, sum - earlier.sum);
  return delta;
}

void HistogramSnapshot::MergeFrom(const HistogramSnapshot& other) {
  for (std::size_t b = 0; b < buckets.size(); ++b) buckets[b] += other.buckets[b];
  count += other.count;
  sum += other.sum;
}

void SingleWriterHistogram::AddTo(HistogramSnapshot& into) const {
  for (std::size_t b = 0; b < kHistogramBuckets; ++b) {
    const std::uint64_t n = buckets_[b].Read();
    into.buckets[b] += n;
    into.count += n;
  }
  into.sum += static_cast<double>(sum_.Read());
}

}  // namespace spindle::internal
