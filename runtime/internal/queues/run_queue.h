// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RUN_QUEUE_H_
#define SPINDLE_RUNTIME_INTERNAL_RUN_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "fiber/internal/atomic.h"
#include "glog/logging.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {

// The accepted range of --fiber_run_queue_size (a power of two within it).
inline constexpr std::uint64_t kMinRunQueueCapacity = 2;
inline constexpr std::uint64_t kMaxRunQueueCapacity = std::uint64_t{1} << 30;

// Reports what is wrong with `capacity` as a value of --fiber_run_queue_size, naming the
// flag, the value and the accepted range; the empty string when it is valid.
std::string ValidateRunQueueCapacity(std::uint64_t capacity);

// A bounded lock-free multi-producer multi-consumer FIFO of ready fibers: Dmitry Vyukov's
// ring with a sequence number per slot (the protocol is in run_queue.cc). Entries are
// opaque non-zero words (the scheduler stores tagged pointers; 0 means "nothing"); the
// queue never dereferences or frees them. Each entry carries a stealable bit: Steal()
// refuses an oldest entry pushed with `stealable == false`.
//
// Thread-safe: every method may be called from any thread at any time. The queue never
// blocks, allocates or switches fibers after construction. Push*() fail when it is full;
// what to do then (back off and retry) is the caller's policy. The queue does not own
// its entries: whatever is still queued when it is destroyed is dropped unseen. It must
// outlive every thread that uses it.
//
// Ordering: every consumer sees each producer's entries in the order they were pushed
// (positions are claimed in order and consumed in order). A successful Push()
// happens-before the Pop() or Steal() that returns the entry, so the entry's referent
// may be written before the push and read after the pop without further fencing.
//
// Progress caveat (inherent to the algorithm): between claiming a position and
// publishing its slot, a producer holds up consumers of that position and of every later
// one; they see the queue as empty meanwhile, even if later pushes have returned. The
// window is a handful of instructions, but a producer preempted in it delays consumers
// until it runs again. So a Pop() that returns 0 proves nothing about other threads'
// completed pushes: each successful push must be followed by its own wake-up decision,
// and a woken consumer should pop until it gets 0.
class RunQueue {
 public:
  // `capacity` must be a power of two in [kMinRunQueueCapacity, kMaxRunQueueCapacity]
  // (CHECK-fails otherwise, naming the value). User input is validated by
  // ValidateRunQueueCapacity() first. Memory: 16 bytes per slot plus three cache lines;
  // the slots are allocated on NUMA node `numa_node` where that node is real (see
  // AllocateOnNode()), from the default policy otherwise.
  explicit RunQueue(std::size_t capacity, int numa_node = kNoNumaNode);
  ~RunQueue();
  RunQueue(const RunQueue&) = delete;
  RunQueue& operator=(const RunQueue&) = delete;

  // Appends `entry` (non-zero). Returns false, pushing nothing, if the queue is full;
  // a slot still being emptied by a Pop() that has claimed it counts as full.
  // `stealable == false` makes Steal() refuse the entry while it is the oldest.
  bool Push(std::uintptr_t entry, bool stealable) {
    // One attempt inline; contention, fullness and everything else go to PushSlow().
    // relaxed: the position is only a guess; the slot's sequence (acquire below) and the
    // CAS on tail_ decide. Same reasoning as the loop in PushSlow().
    std::uint64_t pos = tail_.load(std::memory_order_relaxed);
    Slot& slot = SlotAt(pos);
    // acquire: pairs with the release store in a consumer's FinishTake() that freed the
    // slot a lap ago, so that consumer's read of the old entry happens-before our write.
    const std::uint64_t state = slot.state.load(std::memory_order_acquire);
    // relaxed CAS: claiming a position publishes nothing; the slot's release store
    // in Publish() does.
    if (SeqDistance(state, pos) == 0 &&
        tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
      Publish(slot, pos, entry, stealable);
      return true;
    }
    return PushSlow(entry, stealable);
  }

  // Pushes all `n` entries (non-zero), contiguously and in order, or none of them:
  // returns false if fewer than `n` slots are free. Requires 1 <= n <= capacity().
  // Other producers' entries never interleave with the batch; consumers may start taking
  // its first entries before the last ones are published.
  bool BatchPush(const std::uintptr_t* entries, std::size_t n, bool stealable);

  // Removes and returns the oldest entry, or 0 if the queue is empty (or its oldest
  // position is claimed by a producer that has not published it yet).
  std::uintptr_t Pop() {
    // One attempt inline, as in Push(). relaxed: a guess checked by the slot's sequence
    // and decided by the CAS on head_.
    std::uint64_t pos = head_.load(std::memory_order_relaxed);
    Slot& slot = SlotAt(pos);
    // acquire: pairs with the release store in Publish(), making the entry visible.
    const std::uint64_t state = slot.state.load(std::memory_order_acquire);
    // relaxed CAS: the acquire above already ordered the entry; claiming the position
    // publishes nothing.
    if (SeqDistance(state, pos + 1) == 0 &&
        head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
      return FinishTake(slot, pos);
    }
    return TakeSlow(/*steal=*/false);
  }

  // Like Pop(), but returns 0 and leaves the queue unchanged when the oldest entry was
  // pushed with `stealable == false`. For other scheduling groups' workers. A
  // non-stealable oldest entry hides the stealable ones behind it from thieves. Like
  // Pop(), returns 0 when the oldest position is claimed but not yet published: it never
  // waits for a producer, and never looks past the oldest entry.
  std::uintptr_t Steal() { return TakeSlow(/*steal=*/true); }
  // Like Pop(), and also says whether the entry was pushed with `stealable == false`:
  // for a thief that moves such an entry out of the way of the stealable ones behind it.
  std::uintptr_t PopReportingPin(bool* pinned) {
    return TakeSlow(/*steal=*/false, pinned);
  }

  // Removes and returns the oldest entry if `wanted(entry)` says so; 0, changing
  // nothing, if not (or if the queue is empty). `wanted` sees a value that may be taken
  // by another consumer at any moment, its referent gone: it must only compare it with
  // values whose referents the caller keeps alive (then no other position holds the
  // value, and a won CAS proves nobody took it meanwhile). For a joiner taking back a
  // fiber it already ran inline (SchedulingStrategy::TakeBackEntry).
  template <class Wanted>
  std::uintptr_t TakeOldestIf(Wanted&& wanted) {
    // relaxed: a guess decided by the CAS on head_, as in Pop().
    std::uint64_t pos = head_.load(std::memory_order_relaxed);
    Slot& slot = SlotAt(pos);
    // acquire: pairs with the release store in Publish().
    const std::uint64_t state = slot.state.load(std::memory_order_acquire);
    if (SeqDistance(state, pos + 1) != 0) return 0;
    // relaxed: ordered by the acquire above.
    const std::uintptr_t entry = slot.entry.load(std::memory_order_relaxed);
    // relaxed CAS: as in Pop(). If it wins, nobody took `pos` since we read its slot.
    if (!wanted(entry) ||
        !head_.compare_exchange_strong(pos, pos + 1, std::memory_order_relaxed)) {
      return 0;
    }
    return FinishTake(slot, pos);
  }

  // Entries pushed and not yet taken, from two relaxed loads: a racy snapshot in
  // [0, capacity()], for heuristics and statistics only.
  std::size_t UnsafeSize() const;
  bool UnsafeEmpty() const { return UnsafeSize() == 0; }

  std::size_t capacity() const { return capacity_; }

  // Tests only: the two halves of a Push() by a producer preempted between them, the
  // window described under "Progress caveat". ClaimForTesting() claims the next position
  // without publishing it (false if the queue is full); PublishForTesting() publishes
  // `entry` there.
  bool ClaimForTesting(std::uint64_t* position) { return Claim(position); }
  void PublishForTesting(std::uint64_t position, std::uintptr_t entry, bool stealable) {
    Publish(SlotAt(position), position, entry, stealable);
  }

 private:
  // Slot::state, one 64-bit word:
  //
  //   63                                                   1   0
  //  +------------------------------------------------------+-----+
  //  |  seq: a ring position, times 2 (mod 2^64)             | PIN |
  //  +------------------------------------------------------+-----+
  //
  // seq (see run_queue.cc for its values per lap) says whose turn the slot is. PIN is
  // set when the entry was pushed with `stealable == false`; it is meaningful only while
  // seq says "published", and it travels in the same release store as seq, so a thief's
  // one acquire load sees both together.
  static constexpr std::uint64_t kPinnedBit = 1;
  static constexpr int kSeqShift = 1;

  // 16 bytes: four slots per cache line (see "Slot size" in run_queue.cc).
  struct alignas(16) Slot {
    Atomic<std::uint64_t> state;
    // Written by the producer that owns the position, read by the consumer that owns
    // it; relaxed (ordered by `state`), atomic only so that a reader racing with a
    // writer is never a data race.
    Atomic<std::uintptr_t> entry;
  };
#ifndef SPINDLE_MODEL_CHECK  // a model's atomics are Relacy's, and larger
  static_assert(sizeof(Slot) == 16, "a slot is two words");
#endif
  static_assert(std::atomic<std::uint64_t>::is_always_lock_free, "lock-free state word");

  static constexpr std::size_t kCacheLineSize = 64;

  // Signed distance, in positions, from `pos` to the seq in `state` (PIN ignored).
  // Exact while they differ by less than 2^62, which the capacity bound guarantees.
  static std::int64_t SeqDistance(std::uint64_t state, std::uint64_t pos) {
    return static_cast<std::int64_t>((state & ~kPinnedBit) - (pos << kSeqShift)) /
           (std::int64_t{1} << kSeqShift);
  }

  Slot& SlotAt(std::uint64_t pos) const { return slots_[pos & mask_]; }

  // Fills and publishes the slot of position `pos`, which the caller has claimed.
  static void Publish(Slot& slot, std::uint64_t pos, std::uintptr_t entry,
                      bool stealable) {
    DCHECK_NE(entry, 0u) << "RunQueue entries must be non-zero";
    // relaxed: ordered before the consumer's read by the release store below.
    slot.entry.store(entry, std::memory_order_relaxed);
    // release: pairs with the acquire load of state in Pop()/TakeSlow(), which then see
    // the entry stored above.
    slot.state.store(((pos + 1) << kSeqShift) | (stealable ? 0 : kPinnedBit),
                     std::memory_order_release);
  }

  // Reads the entry of position `pos`, which the caller has claimed, and frees the slot
  // for the producer of position pos + capacity.
  std::uintptr_t FinishTake(Slot& slot, std::uint64_t pos) {
    // relaxed: the caller's acquire load of state made the producer's store visible.
    const std::uintptr_t entry = slot.entry.load(std::memory_order_relaxed);
    // release: pairs with the acquire load of state in Push()/PushSlow()/BatchPush() of
    // the next lap, so our read above happens-before their overwrite.
    slot.state.store((pos + capacity_) << kSeqShift, std::memory_order_release);
    return entry;
  }

  bool PushSlow(std::uintptr_t entry, bool stealable);
  // Claims the next position for a push; false if the queue is full.
  bool Claim(std::uint64_t* position);
  // Takes the oldest entry: refusing a pinned one when `steal`; reporting its pin in
  // `*pinned` when that is given.
  std::uintptr_t TakeSlow(bool steal, bool* pinned = nullptr);

  // Read-only after construction; shared by every thread, so kept off the lines the
  // threads write.
  const std::size_t capacity_;
  const std::uint64_t mask_;
  Slot* const slots_;  // capacity_ slots from AllocateNodeMemory()

  // Next position to push: written by producers only.
  alignas(kCacheLineSize) Atomic<std::uint64_t> tail_{0};
  // Next position to pop: written by consumers only. The alignment of the class pads
  // the end, so the next object in memory does not share this line either.
  alignas(kCacheLineSize) Atomic<std::uint64_t> head_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RUN_QUEUE_H_
