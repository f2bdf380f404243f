// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_LOCAL_QUEUE_H_
#define SPINDLE_RUNTIME_INTERNAL_LOCAL_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fiber/internal/atomic.h"
#include "glog/logging.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {

// The accepted range of --fiber_v2_local_queue_size (a power of two within it).
inline constexpr std::size_t kMinLocalQueueCapacity = 2;
inline constexpr std::size_t kMaxLocalQueueCapacity = std::size_t{1} << 16;

// Reports what is wrong with `capacity` as a value of --fiber_v2_local_queue_size,
// naming the flag, the value and the accepted range; the empty string when it is valid.
std::string ValidateLocalQueueCapacity(std::uint64_t capacity);

// A worker's own run queue (scheduling strategy v2): a bounded lock-free ring with one
// producer, its owner, and any number of consumers, after the Go scheduler's per-P runq
// (runqput/runqget/runqgrab in src/runtime/proc.go; the protocol is in local_queue.cc).
// Entries are opaque non-zero words (the scheduler stores tagged pointers; 0 means
// "nothing"); the queue never dereferences or frees them.
//
// Thread-safety: Push() and Pop() are for the owner thread only, one thread for the
// queue's whole life (or successive owners with a happens-before edge between them).
// Grab(), UnsafeSize(), UnsafeEmpty() and capacity() may be called from any thread at
// any time, the owner included. Nothing blocks, allocates or switches fibers after
// construction. Push() fails when the queue is full; the owner then moves entries
// elsewhere (for instance half of them, with Grab()) and retries.
//
// Ownership: the queue does not own its entries; whatever is still queued when it is
// destroyed is dropped unseen. It must outlive every thread that uses it.
//
// Ordering: entries leave in the order they were pushed (Pop() and Grab() both take from
// the head). A successful Push() happens-before the Pop() or Grab() that returns the
// entry, so the entry's referent may be written before the push and read after the take
// without further fencing.
class LocalQueue {
 public:
  // `capacity` must be a power of two in [kMinLocalQueueCapacity, kMaxLocalQueueCapacity]
  // (CHECK-fails otherwise, naming the value). User input is validated by
  // ValidateLocalQueueCapacity() first. Memory: 8 bytes per slot plus two cache lines;
  // the slots are allocated on NUMA node `numa_node` where that node is real (see
  // AllocateOnNode()), from the default policy otherwise.
  explicit LocalQueue(std::size_t capacity, int numa_node = kNoNumaNode);
  ~LocalQueue();
  LocalQueue(const LocalQueue&) = delete;
  LocalQueue& operator=(const LocalQueue&) = delete;

  // Owner thread only. Appends `entry` (non-zero) at the tail. Returns false, pushing
  // nothing, when the queue is full. No read-modify-write: one acquire load, two stores.
  bool Push(std::uintptr_t entry) {
    DCHECK_NE(entry, 0u) << "LocalQueue entries must be non-zero";
    // relaxed: only this thread writes tail_.
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    // acquire: pairs with the release CAS of head_ in Pop() and Grab(), so a consumer's
    // read of a slot it took happens-before our overwrite of that slot below.
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    if (tail - head >= capacity_) return false;
    // relaxed: published by the release store of tail_ below.
    SlotAt(tail).store(entry, std::memory_order_relaxed);
    // release: pairs with the acquire load of tail_ in Grab() (Pop() runs on this
    // thread), so the entry, and whatever the caller wrote before pushing it, is visible
    // to the consumer that takes it.
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Owner thread only. Whether the queue holds an entry and has room for one more, as
  // PushAndPop() needs (exact but for Grab()s under way, which only take entries: "room"
  // stays true, "an entry" may not).
  bool OwnerHasEntryAndRoom() const {
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // ours
    const std::uint64_t head = head_.load(std::memory_order_relaxed);  // a look only
    return tail != head && tail - head < capacity_;
  }

  // Owner thread only, with room for one more (OwnerHasEntryAndRoom() said so, and
  // nothing was pushed since). Push(entry) then Pop() in one: returns the oldest entry,
  // taken (`entry` itself if Grab()s took all before it, 0 if they took it too). Between
  // the push and the take the queue holds one more entry than before, never fewer: a
  // reader that loads head_ (acquire) before tail_ never sees it emptier than it was
  // before the call.
  std::uintptr_t PushAndPop(std::uintptr_t entry) {
    DCHECK_NE(entry, 0u) << "LocalQueue entries must be non-zero";
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);  // ours
    // acquire: as in Push() (a consumer's read of a slot happens-before our overwrite).
    std::uint64_t head = head_.load(std::memory_order_acquire);
    DCHECK_LT(tail - head, capacity_) << "PushAndPop() on a full queue";
    SlotAt(tail).store(entry, std::memory_order_relaxed);  // published by the store below
    tail_.store(tail + 1, std::memory_order_release);     // as in Push()
    return PopFrom(head, tail + 1);  // the head we loaded; tail + 1 is ours
  }

  // Owner thread only. Removes and returns the oldest entry, or 0 if the queue is empty.
  // One CAS of head_; it is retried only when a Grab() took the head meanwhile.
  std::uintptr_t Pop() {
    // relaxed: a guess decided by the CAS (see PopFrom).
    const std::uint64_t head = head_.load(std::memory_order_relaxed);
    // relaxed: only this thread writes tail_.
    return PopFrom(head, tail_.load(std::memory_order_relaxed));
  }

  // Owner thread only. Removes and returns the oldest entry if `wanted(entry)` says so;
  // 0, changing nothing, if not (or if the queue is empty). As RunQueue::TakeOldestIf:
  // `wanted` may only compare the value with ones whose referents the caller keeps
  // alive, since a Grab() may take the entry at any moment.
  template <class Wanted>
  std::uintptr_t TakeOldestIf(Wanted&& wanted) {
    // relaxed: a guess decided by the CAS. If a Grab() moved head_ past it, the slot may
    // hold a newer entry (never a wanted one again) and the CAS fails anyway.
    std::uint64_t head = head_.load(std::memory_order_relaxed);
    // relaxed: only this thread writes tail_ and the slots.
    const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
    if (head == tail) return 0;
    const std::uintptr_t entry = SlotAt(head).load(std::memory_order_relaxed);
    // release on success: as in Pop() (pairs with the acquire loads of head_ in Push()
    // and Grab()). A Grab() that copied this slot then fails its CAS.
    if (!wanted(entry) ||
        !head_.compare_exchange_strong(head, head + 1, std::memory_order_release,
                                       std::memory_order_relaxed)) {
      return 0;
    }
    return entry;
  }

  // Any thread, the owner included. Takes the oldest ceil(size / 2) entries when `half`,
  // else the oldest one, but at most `max`, with one successful CAS of head_; copies
  // them, oldest first, into out[0..n) and returns n; 0 when the queue is empty (or
  // `max` is 0). Retries internally when it loses the CAS to another consumer or reads
  // an inconsistent head/tail pair; never waits for the owner. The entries it returns
  // were pushed before it returned (see Ordering in the class comment).
  std::size_t Grab(std::uintptr_t* out, std::size_t max, bool half);

  // Entries pushed and not yet taken: a racy snapshot clamped to [0, capacity()], exact
  // on the owner thread while no Grab() runs. head_ is loaded first, with acquire, then
  // tail_: a reader never sees the queue emptier than it was at any moment between the
  // two loads, even across an owner's PushAndPop() (which the idle workers' last
  // look, StrategyV2::AnyQueued(), relies on).
  std::size_t UnsafeSize() const;
  bool UnsafeEmpty() const { return UnsafeSize() == 0; }

  std::size_t capacity() const { return capacity_; }

 private:
  static constexpr std::size_t kCacheLineSize = 64;

  using Slot = Atomic<std::uintptr_t>;
#ifndef SPINDLE_MODEL_CHECK  // a model's atomics are Relacy's, and larger
  static_assert(sizeof(Slot) == sizeof(std::uintptr_t), "a slot is one word");
  static_assert(Slot::is_always_lock_free, "lock-free slots");
#endif
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "lock-free positions");

  Slot& SlotAt(std::uint64_t pos) const { return slots_[pos & mask_]; }

  // Pop() and PushAndPop() from a guess of head_ and the owner's tail_.
  std::uintptr_t PopFrom(std::uint64_t head, std::uint64_t tail) {
    for (;;) {
      DCHECK_LE(head, tail) << "head_ passed tail_";
      if (head == tail) return 0;
      // relaxed: this thread wrote the slot (program order). The slot holds the entry we
      // pushed at `head` as long as head_ has not passed it (see "Pop" in
      // local_queue.cc); if it has, the CAS fails.
      const std::uintptr_t entry = SlotAt(head).load(std::memory_order_relaxed);
      // release on success: pairs with the acquire loads of head_ in Push() (a no-op
      // here: same thread) and in Grab(), whose tail_ load then sees at least our tail.
      // relaxed on failure: the reloaded head is a fresh guess.
      if (head_.compare_exchange_weak(head, head + 1, std::memory_order_release,
                                      std::memory_order_relaxed)) {
        return entry;
      }
    }
  }

  // Read-only after construction; shared by every thread, so kept off the lines the
  // threads write.
  const std::size_t capacity_;
  const std::uint64_t mask_;
  Slot* const slots_;  // capacity_ slots from AllocateNodeMemory()

  // Next position to take: moved forward by a CAS in Pop() and Grab() only.
  alignas(kCacheLineSize) Atomic<std::uint64_t> head_{0};
  // Next position to push: written by the owner only (in Push()). The alignment of the
  // class pads the end, so the next object in memory does not share this line either.
  alignas(kCacheLineSize) Atomic<std::uint64_t> tail_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_LOCAL_QUEUE_H_
