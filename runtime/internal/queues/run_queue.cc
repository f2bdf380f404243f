// Copyright 2026 The Spindle Authors.
//
// The run queue of a scheduling group: a bounded lock-free MPMC FIFO of ready fibers.
//
// Problem. Every worker of a group pushes fibers it makes ready and pops the next one to
// run; timers and the reactor push from their own threads; workers of other groups steal
// when theirs run dry. So any number of threads push and pop the same queue at once, and
// the queue sits on the path of every context switch: it must not take a lock (a
// preempted lock holder stalls the whole group), must not allocate, and should cost a
// few uncontended atomic operations per entry. It is bounded (--fiber_run_queue_size);
// when it is full, Push fails and the caller backs off and retries.
//
// The algorithm is Dmitry Vyukov's bounded MPMC queue
// (https://www.1024cores.net/home/lock-free-algorithms/queues/bounded-mpmc-queue), the
// one flare and tRPC-Cpp use for the same job. Positions are 64-bit counters that never
// wrap in practice: tail_ is the next position to push, head_ the next to pop, and
// position p lives in slot p & mask_. Each slot has a sequence number (seq) saying whose
// turn it is. For the slot of position p (lap p / capacity):
//
//   seq == p             free: the producer of p may claim it (or has claimed it and
//                        not published yet);
//   seq == p + 1         published: holds the entry of p; the consumer of p may claim it
//                        (or has claimed it and not freed it yet);
//   seq == p + capacity  freed: it is now the free slot of position p + capacity.
//
// seq only grows, by 1 then by capacity - 1, per lap. Invariants: head_ <= tail_ <=
// head_ + capacity; position p is claimed by exactly one producer (the CAS that moved
// tail_ past it) and one consumer (the CAS that moved head_ past it); a slot's entry is
// written only between its free and published states and read only between its
// published and freed states.
//
// Push (Push() one attempt inline, then PushSlow()):
//   1. pos = tail_ (relaxed: a guess); load the seq of slot(pos) (acquire: pairs with
//      the release store of pop step 2 that freed the slot a lap ago).
//   2. seq == pos: CAS tail_ pos -> pos + 1. Won: position pos is ours; go to 4.
//      Lost: the CAS reloads pos; go to 1.
//   3. seq < pos: the slot still holds (or is handing over) the entry of pos - capacity:
//      the queue is full; return false. seq > pos: another producer took pos; reload
//      tail_ and go to 1.
//   4. Store the entry (relaxed), then store seq = pos + 1 with release: publish.
// Pop (Pop() one attempt inline, then TakeSlow()):
//   1. pos = head_ (relaxed); load the seq of slot(pos) (acquire: pairs with the
//      release store of push step 4).
//   2. seq == pos + 1: CAS head_ pos -> pos + 1. Won: read the entry (relaxed), then
//      store seq = pos + capacity with release (pairs with push step 1 of the next lap,
//      so our read happens-before that producer's overwrite); return the entry.
//   3. seq < pos + 1: nothing published at pos: the queue is empty, or the producer of
//      pos is between its steps 2 and 4; return 0. seq > pos + 1: another consumer took
//      pos; reload head_ and go to 1.
// Steal: Pop with a predicate checked between steps 1 and 2: if the published slot is
//   pinned (pushed with stealable == false), return 0 without claiming anything.
// BatchPush of n:
//   1. pos = tail_; load the seq of slot(pos + n - 1) and then of every slot of
//      [pos, pos + n) (acquire); each must equal its position.
//   2. Any seq < its position: fewer than n free slots; return false. Any seq > its
//      position: pos is stale; reload tail_ and go to 1.
//   3. CAS tail_ pos -> pos + n. Lost: go to 1 with the reloaded pos.
//   4. Publish each slot in order, as push step 4.
//   Checking and then claiming is race-free: a slot whose seq equals its position p
//   changes only when the producer that owns p publishes it, and p can be owned only by
//   a CAS of tail_ past p. tail_ only grows, so if our CAS from pos succeeds, nobody
//   else moved tail_ past any p in [pos, pos + n) in between: every slot we saw free is
//   still free, and now ours. (Consumers never touch a free slot: they need seq == p + 1,
//   which only the owner of p creates.) The acquire loads of step 1 are what order the
//   previous lap's reads of those slots before our writes, as in push step 1.
//
// Memory ordering. The CASes on tail_ and head_ are relaxed: claiming a position
// publishes nothing; every cross-thread hand-over goes through the slot's seq, with a
// release store by the side giving the slot up and an acquire load by the side taking it.
// So a successful Push happens-before the Pop/Steal that returns its entry (the
// scheduler relies on it to hand over the fiber's state) and a Pop's read of the entry
// happens-before the next lap's overwrite. Entries are atomic words accessed relaxed:
// the protocol already orders them, but a Steal may load a slot's state while its
// producer writes it, and atomics keep such races defined (and TSan quiet).
//
// Deviations from Vyukov's queue. (a) BatchPush (above; flare's BatchPush does the
// same). (b) The steal predicate: Steal reads the stealable flag from the very word it
// loads seq from, with the same acquire, so it can never see a flag that belongs to
// another lap's entry; and it decides before claiming, so a refusal leaves the queue
// untouched (a non-stealable oldest entry blocks thieves, which is what the scheduler
// wants: such a fiber must stay in its group, and the group's own workers will get to
// it next). (c) The flag is folded into seq: state = seq << 1 | pinned (bit diagram in
// run_queue.h), so seq is kept times two; SeqDistance() compares in that domain, exact
// for distances below 2^62.
//
// Slot size. A slot is 16 bytes, four to a cache line: at the default capacity of
// 65536, 1 MiB per queue. flare and tRPC pad each slot to a cache line (4 MiB per
// queue, per scheduling group) so that neighbouring slots used by different threads
// never share a line. We do not: both sides already meet on head_/tail_ at every
// operation; positions advance through the whole ring even when the queue is short, so
// every line of it is brought in once per lap, and 16-byte slots bring in four entries
// per line instead of one; a batch of 8 fills two lines, not eight. The cost is false
// sharing between a producer and a consumer working on neighbouring slots of a nearly
// empty queue, and it is the cheaper side, probably because a line then carries four
// entries from the producer's core to the consumer's instead of one
// (run_queue_benchmark.cc compares the two; docs/internals/scheduler.md has the
// figures).
//
// Rejected alternatives.
// - std::mutex + std::deque: simple and FIFO, but every operation takes the lock, a
//   preempted holder stalls the whole group, and the deque allocates. It is the
//   baseline in run_queue_benchmark.cc.
// - Unbounded linked MPMC queues (Michael-Scott, Vyukov's intrusive MPSC): a node
//   allocation or an intrusive link per entry, safe memory reclamation for the
//   multi-consumer case, and no natural place for back-pressure; a bounded ring with a
//   flag-sized limit makes overload visible instead.
// - Per-worker Chase-Lev deques with stealing (Go, Tokio): the better design when each
//   worker owns its queue, but Spindle's groups share one queue among their workers (as
//   flare does), so every consumer is a "thief" and the owner fast path is lost.
// - Cache-line-padded slots: see "Slot size".
//
// Caveat (inherent to the algorithm, see the class comment): a producer between its
// claim (push step 2) and its publication (push step 4) makes consumers of that
// position, and so of every later one, see an empty queue until it finishes. Pop and
// Steal return 0 then rather than wait, so a worker never spins on a stalled producer;
// the fiber it publishes is picked up by whoever looks next.

#include "runtime/internal/queues/run_queue.h"

#include <algorithm>
#include <new>
#include <type_traits>

#include "fiber/internal/spinlock.h"
#include "runtime/internal/queues/capacity.h"

namespace spindle::internal {
namespace {

// Checked before the slots are allocated, so a bad value fails with a message rather
// than with bad_alloc.
std::size_t CheckedCapacity(std::size_t capacity) {
  const std::string error =
      PowerOfTwoError("RunQueue capacity ", capacity, kMinRunQueueCapacity, kMaxRunQueueCapacity);
  CHECK(error.empty()) << error;
  return capacity;
}

}  // namespace

std::string ValidateRunQueueCapacity(std::uint64_t capacity) {
  return PowerOfTwoError("--fiber_run_queue_size=", capacity, kMinRunQueueCapacity, kMaxRunQueueCapacity);
}

RunQueue::RunQueue(std::size_t capacity, int numa_node)
    : capacity_(CheckedCapacity(capacity)),
      mask_(capacity - 1),
      slots_(static_cast<Slot*>(AllocateNodeMemory(capacity * sizeof(Slot), numa_node))) {
  for (std::uint64_t i = 0; i < capacity_; ++i) {
    new (&slots_[i]) Slot;
    // relaxed: the queue is not shared yet; whoever hands it to other threads provides
    // the happens-before edge for its construction.
    slots_[i].state.store(i << kSeqShift, std::memory_order_relaxed);
    slots_[i].entry.store(0, std::memory_order_relaxed);
  }
}

RunQueue::~RunQueue() {
#ifdef SPINDLE_MODEL_CHECK
  // A model's slots hold Relacy's atomics, which must be destroyed.
  for (std::uint64_t i = 0; i < capacity_; ++i) slots_[i].~Slot();
#else
  static_assert(std::is_trivially_destructible_v<Slot>, "slots are freed unseen");
#endif
  FreeNodeMemory(slots_, capacity_ * sizeof(Slot));
}

bool RunQueue::PushSlow(std::uintptr_t entry, bool stealable) {
  std::uint64_t pos = 0;
  if (!Claim(&pos)) return false;
  Publish(SlotAt(pos), pos, entry, stealable);
  return true;
}

bool RunQueue::Claim(std::uint64_t* claimed) {
  // relaxed: a guess, as in Push().
  std::uint64_t pos = tail_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& slot = SlotAt(pos);
    // acquire: pairs with the release store in FinishTake() that freed the slot.
    const std::int64_t distance =
        SeqDistance(slot.state.load(std::memory_order_acquire), pos);
    if (distance == 0) {
      // relaxed CAS: claims pos and publishes nothing (Publish() does). On failure it
      // reloads pos.
      if (tail_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        *claimed = pos;
        return true;
      }
    } else if (distance < 0) {
      return false;  // the entry of pos - capacity is still in the slot: full
    } else {
      // relaxed: another producer claimed pos; catch up with it.
      pos = tail_.load(std::memory_order_relaxed);
    }
    CpuRelax();
  }
}

bool RunQueue::BatchPush(const std::uintptr_t* entries, std::size_t n, bool stealable) {
  DCHECK(n >= 1 && n <= capacity_)
      << "BatchPush of " << n << " entries into a RunQueue of " << capacity_;
  // relaxed: a guess, checked against the slots and decided by the CAS.
  std::uint64_t pos = tail_.load(std::memory_order_relaxed);
  for (;;) {
    // Step 1 of BatchPush in the design comment. The last slot first: when the queue is
    // nearly full it is the one still occupied, so a doomed batch fails after one load.
    // acquire (every load): pairs with the release store in FinishTake() that freed the
    // slot a lap ago.
    std::int64_t distance = SeqDistance(
        SlotAt(pos + n - 1).state.load(std::memory_order_acquire), pos + n - 1);
    for (std::size_t k = 0; distance == 0 && k + 1 < n; ++k) {
      distance =
          SeqDistance(SlotAt(pos + k).state.load(std::memory_order_acquire), pos + k);
    }
    if (distance < 0) return false;  // fewer than n free slots
    if (distance > 0) {
      pos = tail_.load(std::memory_order_relaxed);  // relaxed: pos was stale; reload
    } else if (tail_.compare_exchange_weak(pos, pos + n, std::memory_order_relaxed)) {
      // relaxed CAS: claims [pos, pos + n), which the check above saw free and nobody
      // else can have claimed since (see the design comment); Publish() publishes.
      for (std::size_t k = 0; k < n; ++k) {
        Publish(SlotAt(pos + k), pos + k, entries[k], stealable);
      }
      return true;
    }
    CpuRelax();
  }
}

std::uintptr_t RunQueue::TakeSlow(bool steal, bool* pinned) {
  // relaxed: a guess, as in Pop().
  std::uint64_t pos = head_.load(std::memory_order_relaxed);
  for (;;) {
    Slot& slot = SlotAt(pos);
    // acquire: pairs with the release store in Publish(); it also covers the PIN bit,
    // which lives in the same word.
    const std::uint64_t state = slot.state.load(std::memory_order_acquire);
    const std::int64_t distance = SeqDistance(state, pos + 1);
    if (distance == 0) {
      // The entry of pos stays in this slot until pos is claimed, and head_ == pos
      // means it is not, so the flag we refuse on belongs to the entry a CAS would take.
      if (steal && (state & kPinnedBit) != 0) return 0;
      // relaxed CAS: the acquire above ordered the entry. On failure it reloads pos.
      if (head_.compare_exchange_weak(pos, pos + 1, std::memory_order_relaxed)) {
        if (pinned != nullptr) *pinned = (state & kPinnedBit) != 0;
        return FinishTake(slot, pos);
      }
    } else if (distance < 0) {
      return 0;  // nothing published at pos: empty, or its producer is mid-push
    } else {
      // relaxed: another consumer claimed pos; catch up with it.
      pos = head_.load(std::memory_order_relaxed);
    }
    CpuRelax();
  }
}

std::size_t RunQueue::UnsafeSize() const {
  // relaxed (both): a statistic. head_ is read first: it never passes tail_, so tail_
  // read afterwards is usually not behind it; the clamps cover the snapshots that are.
  const std::uint64_t head = head_.load(std::memory_order_relaxed);
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail <= head) return 0;
  return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
}

}  // namespace spindle::internal
