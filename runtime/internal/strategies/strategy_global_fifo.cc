// Copyright 2026 The Spindle Authors.
//
// Strategy globalfifo: seed 000's GlobalFIFO baseline ("one global queue with a
// std::mutex"), registered like the others so that every sweep measures it beside
// them. One std::deque per group under one mutex; FIFO for everything (starts, wake-ups,
// yields, timers); the searcher/sleeper notifier of v2 and relaxed.
//
// No lost wake-up: a push stores the queue's size under the lock, then runs the
// notifier's producer side (N1-N5 in notifier.cc, its fence first); an idle worker's
// re-check (W3) takes through TakeNext(), which reads the size after the notifier's
// fence and then the queue under the lock. That is the pair notifier.cc proves for any
// queue whose push is visible to UnsafeEmpty() once it returned.
//
// Stealing between groups takes the oldest stealable entries, at most half the queue,
// passing over scheduling_group_local ones (which stay in place, for this group's
// workers): a local fiber at the head must not hide the stealable ones behind it
// (fiber_worker_test's GroupLocalTest; v1's ring moves such entries aside for the same
// reason). A count of the stealable entries keeps thieves from scanning a queue of
// local fibers only (MayHaveStealable, and StealBatch's first look). Dead entries (descriptors a joiner ran inline and could not
// take back from the head) are dropped by whoever takes them, and, once a joiner noted
// some, by the next push that finds the queue at its compaction size (twice what the
// last compaction left, at least kMinCompactSize): a fiber that joins in a loop while
// its worker never pops would otherwise grow the queue without bound (fiber_test's
// JoinLoopTest). Amortised, each push pays for dropping at most one entry.

#include "runtime/internal/strategies/strategy_global_fifo.h"

#include <algorithm>
#include <memory>
#include <string>

#include "runtime/internal/base/fiber_desc.h"

namespace spindle::internal {
namespace {

constexpr std::size_t kMinCompactSize = 1024;

std::unique_ptr<SchedulingStrategy> CreateGlobalFifo(const SchedulingGroupOptions& options) {
  return std::unique_ptr<SchedulingStrategy>(new (options.memory_node)
                                                 StrategyGlobalFifo(options));
}

}  // namespace

const StrategyEntry kStrategyGlobalFifoEntry = {
    "globalfifo", [] { return std::string(); }, &CreateGlobalFifo};

StrategyGlobalFifo::StrategyGlobalFifo(const SchedulingGroupOptions& options)
    : SchedulingStrategy(notifier_),
      options_(options),
      compact_at_(kMinCompactSize),
      notifier_(*this, options.workers) {}

void StrategyGlobalFifo::NoteDeadEntries() {
  // relaxed: a hint; a compaction that misses it leaves the entries to their consumers.
  if (!dead_entries_.load(std::memory_order_relaxed)) {
    dead_entries_.store(true, std::memory_order_relaxed);
  }
}

void StrategyGlobalFifo::CompactIfDue() {
  if (queue_.size() < compact_at_) return;
  // relaxed: see NoteDeadEntries(); cleared first, so entries noted meanwhile count.
  if (dead_entries_.load(std::memory_order_relaxed) &&
      dead_entries_.exchange(false, std::memory_order_relaxed)) {
    // The queue's references are ours under the lock: dropping one frees the
    // descriptor if its joiner is done with it (DropIfRunInline).
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                [](const Queued& q) { return DropIfRunInline(q.entry); }),
                 queue_.end());
    stealable_count_ = static_cast<std::size_t>(std::count_if(
        queue_.begin(), queue_.end(), [](const Queued& q) { return q.stealable; }));
    stealable_size_.store(stealable_count_, std::memory_order_relaxed);  // relaxed: a hint
  }
  compact_at_ = std::max(kMinCompactSize, 2 * queue_.size());
}

void StrategyGlobalFifo::Enqueue(std::uintptr_t entry, bool stealable, ReadyReason,
                                 std::size_t) {
  {
    OsMutexGuard lock(lock_);
    CompactIfDue();
    queue_.push_back({entry, stealable});
    CountStealable(stealable ? 1 : 0);
    // relaxed: the lock orders it for holders; lock-free readers read it after their
    // fence (see the top).
    size_.store(queue_.size(), std::memory_order_relaxed);
  }
  notifier_.Notify();
}

void StrategyGlobalFifo::EnqueueBatch(const std::uintptr_t* entries, const bool* stealable,
                                      std::size_t n, std::size_t) {
  {
    OsMutexGuard lock(lock_);
    CompactIfDue();
    std::size_t added = 0;
    for (std::size_t i = 0; i < n; ++i) {
      queue_.push_back({entries[i], stealable[i]});
      added += stealable[i] ? 1 : 0;
    }
    CountStealable(static_cast<std::ptrdiff_t>(added));
    size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: as in Enqueue()
  }
  // One wake-up: a woken searcher that finds work and is the last one out wakes the
  // next while fibers remain (I4 in notifier.cc), as relaxed's batches do.
  notifier_.Notify();
}

std::uintptr_t StrategyGlobalFifo::TakeNext(std::size_t) {
  for (;;) {
    // relaxed: the cheap look of an idle poll; the lock decides.
    if (size_.load(std::memory_order_relaxed) == 0) return 0;
    std::uintptr_t entry = 0;
    {
      OsMutexGuard lock(lock_);
      if (queue_.empty()) return 0;
      entry = queue_.front().entry;
      if (queue_.front().stealable) CountStealable(-1);
      queue_.pop_front();
      size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: as in Enqueue()
    }
    if (ClaimEntry(entry)) return entry;  // else its joiner ran it inline: dropped
  }
}

std::size_t StrategyGlobalFifo::StealBatch(std::uintptr_t* out, std::size_t max) {
  std::size_t got = 0;
  {
    OsMutexGuard lock(lock_);
    const std::size_t want = std::min(max, (stealable_count_ + 1) / 2);
    for (auto it = queue_.begin(); it != queue_.end() && got < want;) {
      if (it->stealable) {
        out[got++] = it->entry;
        it = queue_.erase(it);
      } else {
        ++it;
      }
    }
    CountStealable(-static_cast<std::ptrdiff_t>(got));
    size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: as in Enqueue()
  }
  // The first that no joiner ran is claimed (the thief runs it); the rest stay
  // unclaimed, less those already run inline (SchedulingStrategy::StealBatch).
  std::size_t n = 0;
  for (std::size_t k = 0; k < got; ++k) {
    if (n == 0 ? !ClaimEntry(out[k]) : DropIfRunInline(out[k])) continue;
    out[n++] = out[k];
  }
  return n;
}

bool StrategyGlobalFifo::MayHaveStealable() const {
  return stealable_size_.load(std::memory_order_relaxed) != 0;  // relaxed: a hint
}

void StrategyGlobalFifo::CountStealable(std::ptrdiff_t delta) {
  stealable_count_ =
      static_cast<std::size_t>(static_cast<std::ptrdiff_t>(stealable_count_) + delta);
  stealable_size_.store(stealable_count_, std::memory_order_relaxed);  // relaxed: a hint
}

bool StrategyGlobalFifo::TakeBackEntry(std::size_t, std::uintptr_t entry) {
  // The head only, as v1's ring: a baseline, not a tuned queue.
  OsMutexGuard lock(lock_);
  if (queue_.empty() || queue_.front().entry != entry) return false;
  if (queue_.front().stealable) CountStealable(-1);
  queue_.pop_front();
  size_.store(queue_.size(), std::memory_order_relaxed);  // relaxed: as in Enqueue()
  return true;
}

bool StrategyGlobalFifo::UnsafeEmpty() const {
  return size_.load(std::memory_order_relaxed) == 0;  // relaxed: after the caller's fence
}

StrategyStats StrategyGlobalFifo::stats() const {
  StrategyStats stats;
  stats.wakeups = notifier_.wakeups();
  stats.global_queue_size = size_.load(std::memory_order_relaxed);  // relaxed: a snapshot
  return stats;
}

}  // namespace spindle::internal
