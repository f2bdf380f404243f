// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_GLOBAL_RUN_QUEUE_H_
#define SPINDLE_RUNTIME_INTERNAL_GLOBAL_RUN_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "fiber/internal/os_mutex.h"
#include "runtime/internal/queues/run_queue.h"

namespace spindle::internal {

// A scheduling group's shared queue (v1's only queue, v2's global queue): the bounded
// lock-free RunQueue plus what to do when it is full. Nothing is ever dropped. A
// producer on a plain thread backs off and retries (back-pressure on whoever floods the
// runtime from outside). A producer on a runtime thread must not: a worker is also a
// consumer, and when every worker is a fiber spawning children into a full queue
// (skynet does this), backing off would stop them all for good; a timer thread would
// hold up every later timer. Such a producer spills to an overflow list instead, which
// consumers drain first. Both paths log a rate-limited warning naming
// --fiber_run_queue_size. UnsafeSize() counts the overflow list too, so a strategy's
// re-check before sleeping covers spilled entries. Before either, a full ring that may
// hold descriptors their joiners ran inline (NoteDeadEntries()) is compacted, so such
// entries never hold up a producer (see Compact()).
//
// Take() skips descriptors a joiner already ran (ClaimEntry). Thread-safe: every method
// from any thread; must outlive them.
class GlobalRunQueue {
 public:
  GlobalRunQueue(std::size_t group_index, std::size_t capacity, int numa_node);
  ~GlobalRunQueue();
  GlobalRunQueue(const GlobalRunQueue&) = delete;
  GlobalRunQueue& operator=(const GlobalRunQueue&) = delete;

  // Appends `entry`. When the ring is full: spills (runtime thread) or calls
  // `make_room()` (wake the consumers), pauses and retries (other threads).
  void Push(std::uintptr_t entry, bool stealable, absl::FunctionRef<void()> make_room) {
    if (!ring_.Push(entry, stealable)) PushSlow(entry, stealable, make_room);
  }
  // Appends n entries, in batches where all are stealable.
  void PushMany(const std::uintptr_t* entries, const bool* stealable, std::size_t n,
                absl::FunctionRef<void()> make_room);
  // The oldest entry still to be run (the overflow list first); 0 if none.
  std::uintptr_t Take();
  // For a worker of another group: the oldest stealable entry (never from the overflow
  // list); 0 if none. A scheduling_group_local entry at the head does not hide the
  // stealable ones behind it: it is moved to the overflow list, which only this group's
  // workers take from (and first), and `*moved_pinned` is set; the caller then makes
  // the wake-up decision a producer makes, since the entry was out of every queue for
  // a moment. At most a few are moved per call.
  std::uintptr_t Steal(bool* moved_pinned);
  // Steal(), then up to `max` - 1 more (at most half the ring, rounded up, and 1) for
  // SchedulingStrategy::StealBatch: out[0] claimed, the others not (descriptors their
  // joiners already ran are dropped). How many; `*moved_pinned` as for Steal(), with
  // at most a few moved in all.
  std::size_t StealBatch(std::uintptr_t* out, std::size_t max, bool* moved_pinned);
  // Up to `max` of the oldest entries, into `out`, NOT claimed (ClaimEntry): the caller
  // claims the one it runs and queues the rest elsewhere, to be claimed by whoever takes
  // them there. How many.
  std::size_t TakeBatchUnclaimed(std::uintptr_t* out, std::size_t max);

  // SchedulingStrategy::TakeBackEntry on the ring (not the overflow list): takes
  // `entry` if it is the oldest; whether it did.
  bool TakeBackEntry(std::uintptr_t entry) {
    return ring_.TakeOldestIf([entry](std::uintptr_t queued) { return queued == entry; }) != 0;
  }
  // Some descriptor that a joiner ran inline may be queued here where it could not take
  // it back (SchedulingStrategy::NoteDeadEntries): the next time the ring is full, it is
  // compacted before anything else (see PushSlow()).
  void NoteDeadEntries() {
    // relaxed load first: the flag is usually set already. relaxed store: a hint; a
    // compaction that misses it only leaves the entries to their consumers.
    if (!dead_entries_.load(std::memory_order_relaxed)) {
      dead_entries_.store(true, std::memory_order_relaxed);
    }
  }

  // Entries in the ring and in the overflow list: a relaxed snapshot. A strategy's
  // re-check reads it after its fence; a producer's push is in it once its Push()
  // returned (the ring's tail and the overflow count are updated before that).
  std::size_t UnsafeSize() const {
    // relaxed: see Spill() for the overflow count.
    return ring_.UnsafeSize() + overflow_size_.load(std::memory_order_relaxed);
  }
  std::size_t UnsafeRingSize() const { return ring_.UnsafeSize(); }
  bool UnsafeEmpty() const { return UnsafeSize() == 0; }
  std::size_t capacity() const { return ring_.capacity(); }
  // Entries a runtime thread spilled to the overflow list because the ring was full
  // (a relaxed count since construction; the runtime's run_queue_spills metric).
  std::uint64_t spills() const { return spills_.load(std::memory_order_relaxed); }
  // Pushes by a thread that is not the runtime's that found the ring full and waited for
  // room (a relaxed count since construction; the run_queue_full_waits metric).
  std::uint64_t full_waits() const { return full_waits_.load(std::memory_order_relaxed); }

  // Tests only: a push stalled between claiming its position and publishing it
  // (run_queue.h's progress caveat).
  bool ClaimForTesting(std::uint64_t* position) { return ring_.ClaimForTesting(position); }
  void PublishForTesting(std::uint64_t position, std::uintptr_t entry, bool stealable) {
    ring_.PublishForTesting(position, entry, stealable);
  }

 private:
  // Steal() without the claim: the entry as it was queued (a descriptor whose joiner
  // already ran it inline may be returned). `*moved` counts the pinned entries moved by
  // the caller's calls so far (at most a few per Steal() or StealBatch()).
  std::uintptr_t StealUnclaimed(bool* moved_pinned, std::size_t* moved);
  void PushSlow(std::uintptr_t entry, bool stealable, absl::FunctionRef<void()> make_room);
  // A runtime thread's entries that found the ring full: to the overflow list, in
  // order, under one lock; counted in spills().
  void Spill(const std::uintptr_t* entries, std::size_t n);
  // With the ring full and dead entries noted: pops a batch of its oldest entries, drops
  // those a joiner already ran inline, and moves the others, in order, to the back of
  // the overflow list. How many were dropped.
  std::size_t Compact();
  std::uintptr_t PopOverflow();

  const std::size_t group_index_;
  RunQueue ring_;
  // Touched only when the ring is full; consumers look here first while
  // `overflow_size_` is not 0.
  alignas(64) std::atomic<std::size_t> overflow_size_{0};
  std::atomic<bool> dead_entries_{false};  // see NoteDeadEntries()
  std::atomic<std::uint64_t> spills_{0};      // see spills()
  std::atomic<std::uint64_t> full_waits_{0};  // see full_waits()
  OsMutex overflow_lock_;
  std::deque<std::uintptr_t> overflow_ ABSL_GUARDED_BY(overflow_lock_);
};

// Marks the calling thread as one of the runtime's own threads (FiberWorkers and
// TimerWorkers do this): it spills to the overflow list instead of waiting for room.
void MarkThisThreadAsRuntimeThread(bool is_runtime_thread);

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_GLOBAL_RUN_QUEUE_H_
