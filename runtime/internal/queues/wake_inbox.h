// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_WAKE_INBOX_H_
#define SPINDLE_RUNTIME_INTERNAL_WAKE_INBOX_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

#include "fiber/internal/atomic.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

// One v2 worker's inbox of fibers woken by a timer round (StrategyV2::EnqueueWoken),
// which the worker runs before its local queue (strategy_v2.cc, TK0). FIFO, unbounded.
// Thread-safety: PostMany() and Grab() from any thread; Take() by the owner worker
// (any thread would be safe: every operation takes the lock); MaybeNonEmpty() and
// UnsafeSize() anywhere, as hints. Entries are run-queue words (fiber_desc.h), never
// dereferenced here.
//
// A spinlock around a vector rather than a lock-free ring: the producer posts a whole
// round's share under one lock, consumers take one entry (the owner) or half (a thief)
// per lock, and the owner's empty check is one relaxed load of a line that only changes
// when a round posts; an unbounded store also has no overflow policy to argue about.
class WakeInbox {
 public:
  // Room for a firing round's share from the start (a round queues its fibers 64 at a
  // time): an inbox then grows, allocating, only past its busiest moment so far, never
  // on a steady stream of timer wake-ups.
  WakeInbox() { entries_.reserve(64); }
  WakeInbox(const WakeInbox&) = delete;
  WakeInbox& operator=(const WakeInbox&) = delete;

  // Whether an entry may be queued. relaxed: a hint; Take() and Grab() decide under the
  // lock. A caller that must not miss a post (a re-check before sleeping) orders this
  // load after its own seq_cst fence, against the producer's fence after PostMany()
  // (StrategyV2's N1).
  bool MaybeNonEmpty() const { return size_.load(std::memory_order_relaxed) != 0; }
  std::size_t UnsafeSize() const { return size_.load(std::memory_order_relaxed); }

  // Appends `n` entries, in order. May allocate (outside any fiber's lock).
  void PostMany(const std::uintptr_t* entries, std::size_t n) {
    std::lock_guard<Spinlock> lock(lock_);
    // Drop what was taken once it is most of the vector, so an inbox that is never
    // quite empty does not grow without bound.
    if (head_ == entries_.size() || (head_ >= 64 && head_ * 2 >= entries_.size())) {
      entries_.erase(entries_.begin(), entries_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    entries_.insert(entries_.end(), entries, entries + n);
    PublishSize();
  }

  // The oldest entry, or 0.
  std::uintptr_t Take() {
    if (!MaybeNonEmpty()) return 0;
    std::lock_guard<Spinlock> lock(lock_);
    if (head_ == entries_.size()) return 0;
    const std::uintptr_t entry = entries_[head_++];
    PublishSize();
    return entry;
  }

  // Up to `max` of the oldest entries (half of them, rounded up, when `half`) into
  // `out`, oldest first; returns how many.
  std::size_t Grab(std::uintptr_t* out, std::size_t max, bool half) {
    if (!MaybeNonEmpty()) return 0;
    std::lock_guard<Spinlock> lock(lock_);
    std::size_t n = entries_.size() - head_;
    if (half) n -= n / 2;
    if (n > max) n = max;
    for (std::size_t i = 0; i < n; ++i) out[i] = entries_[head_ + i];
    head_ += n;
    PublishSize();
    return n;
  }

 private:
  // Under lock_. release: not needed for the entries (the lock publishes them); it keeps
  // the hint from running ahead of the critical section for readers that then lock.
  void PublishSize() {
    size_.store(entries_.size() - head_, std::memory_order_release);
  }

  Atomic<std::size_t> size_{0};  // entries_.size() - head_, written under lock_
  Spinlock lock_;
  std::vector<std::uintptr_t> entries_;  // [head_, size) queued; under lock_
  std::size_t head_ = 0;                 // under lock_
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_WAKE_INBOX_H_
