// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_QUEUES_STAGE_BUFFER_H_
#define SPINDLE_RUNTIME_INTERNAL_QUEUES_STAGE_BUFFER_H_

#include <cstddef>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/atomic.h"
#include "fiber/internal/spinlock.h"
#include "glog/logging.h"

namespace spindle::internal {

// The largest capacity of a stage (--fiber_v1_stage_size; its range is [0, this]).
inline constexpr std::size_t kMaxStageCapacity = 256;

// One worker's stage under strategy v1 (strategy_v1.cc, "Staging"): the fibers its
// running fiber made ready while every worker that could take them was busy, in the
// order they were made ready, kept off the group's shared queue until the worker's
// next scheduling point, an idle sibling's look, or the hog monitor's rescue.
//
// A bounded FIFO with removal from anywhere (a joiner taking back a child it ran
// inline, usually among the newest), under a spinlock that only its worker takes in
// the common case: an idle sibling or the hog monitor takes it only after UnsafeSize()
// said the stage is not empty, which happens only while a worker of the group is idle
// or a fiber hogs its worker. Every operation is O(1) but Remove(), which is O(size).
//
// Thread-safety: every method from any thread. Entries are opaque non-zero words, never
// dereferenced. Ordering: the lock orders an entry's Push() before the take that
// returns it, so the referent written before the push is visible after the take.
class StageBuffer {
 public:
  // `capacity` in [0, kMaxStageCapacity] (CHECK-fails otherwise; users' values are
  // validated by the flag's check first). A stage of capacity 0 is always full.
  explicit StageBuffer(std::size_t capacity) : capacity_(capacity) {
    CHECK(capacity <= kMaxStageCapacity) << "StageBuffer capacity " << capacity
                                         << " is outside [0, " << kMaxStageCapacity << "]";
  }
  StageBuffer(const StageBuffer&) = delete;
  StageBuffer& operator=(const StageBuffer&) = delete;

  // Appends `entry` (non-zero) as the newest; false, appending nothing, when full.
  bool Push(std::uintptr_t entry, bool stealable) {
    SpinlockGuard lock(lock_);
    if (size_ == capacity_) return false;
    const std::size_t at = Index(size_);
    entries_[at] = entry;
    stealable_[at] = stealable;
    SetSize(size_ + 1);
    return true;
  }

  // Removes `entry` wherever it is (the newest first: a joiner's child is usually
  // among the last made ready); whether it was there.
  bool Remove(std::uintptr_t entry) {
    SpinlockGuard lock(lock_);
    for (std::size_t k = size_; k-- > 0;) {
      if (entries_[Index(k)] != entry) continue;
      // Close the gap: the newer entries move back by one, keeping their order.
      for (std::size_t j = k; j + 1 < size_; ++j) {
        entries_[Index(j)] = entries_[Index(j + 1)];
        stealable_[Index(j)] = stealable_[Index(j + 1)];
      }
      SetSize(size_ - 1);
      return true;
    }
    return false;
  }

  // Moves up to `max` of the oldest entries, oldest first, into `out` (and their
  // stealable bits into `stealable`); how many.
  std::size_t TakeOldest(std::uintptr_t* out, bool* stealable, std::size_t max) {
    SpinlockGuard lock(lock_);
    const std::size_t n = max < size_ ? max : size_;
    for (std::size_t k = 0; k < n; ++k) {
      out[k] = entries_[Index(k)];
      stealable[k] = stealable_[Index(k)];
    }
    head_ = (head_ + n) % kMaxStageCapacity;
    SetSize(size_ - n);
    return n;
  }

  // Entries staged: a relaxed snapshot, for a look before taking the lock. It is
  // written under the lock before the lock is released, so a reader that ordered its
  // read after a pusher's fence (the notifier's Dekker pair) sees the push.
  std::size_t UnsafeSize() const { return published_size_.load(std::memory_order_relaxed); }
  std::size_t capacity() const { return capacity_; }

 private:
  std::size_t Index(std::size_t k) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    return (head_ + k) % kMaxStageCapacity;
  }
  void SetSize(std::size_t size) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    size_ = size;
    // relaxed: see UnsafeSize(); the lock orders it for holders.
    published_size_.store(size, std::memory_order_relaxed);
  }

  const std::size_t capacity_;
  mutable Spinlock lock_;
  std::size_t head_ ABSL_GUARDED_BY(lock_) = 0;  // index of the oldest entry
  std::size_t size_ ABSL_GUARDED_BY(lock_) = 0;
  Atomic<std::size_t> published_size_{0};  // size_, for lock-free looks
  // A ring over the largest capacity (2 KiB of entries): `capacity_` bounds how much of
  // it is used, and the index needs no division by a run-time value.
  std::uintptr_t entries_[kMaxStageCapacity] ABSL_GUARDED_BY(lock_);
  bool stealable_[kMaxStageCapacity] ABSL_GUARDED_BY(lock_);
};

// An idle worker's look at its siblings' stages (G3 in strategy_v1.cc and
// strategy_v2.cc): the oldest entry of the first non-empty stage among workers
// worker + 1, worker + 2, ... of `n` (wrapping), `stage_of(i)` being worker i's, for
// which `claim(entry)` is true; the entries it refuses (descriptors a joiner already
// ran inline, which `claim` releases) are gone. 0 if none.
template <class StageOf, class Claim>
std::uintptr_t TakeFromSiblingStages(std::size_t worker, std::size_t n, StageOf stage_of,
                                     Claim claim) {
  for (std::size_t i = 1; i < n; ++i) {
    StageBuffer& stage = stage_of((worker + i) % n);
    // relaxed: see StageBuffer::UnsafeSize(); the lock inside TakeOldest() decides.
    while (stage.UnsafeSize() != 0) {
      std::uintptr_t entry = 0;
      bool stealable = false;
      if (stage.TakeOldest(&entry, &stealable, 1) == 0) break;
      if (claim(entry)) return entry;
    }
  }
  return 0;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_QUEUES_STAGE_BUFFER_H_
