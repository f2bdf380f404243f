// Copyright 2026 The Spindle Authors.
//
// A worker's own run queue for scheduling strategy v2: a bounded lock-free ring with a
// single producer (the owner) and many consumers (the owner and thieves).
//
// Problem. In strategy v2 each worker keeps the fibers it makes ready in a queue of its
// own and runs them from there; idle workers steal from it. The owner's push and pop
// sit on the path of every context switch and should cost a few plain loads and stores,
// while thieves, which run only when they have nothing else to do, may pay for a CAS
// and take many entries at once (half the queue) to make a steal worth its cache
// misses. The shared MPMC RunQueue (run_queue.cc) pays a CAS on every push.
//
// The algorithm is the Go scheduler's per-P runq (runqput, runqget, runqgrab in
// src/runtime/proc.go). Positions are 64-bit counters that never wrap in practice:
// tail_ is the next position to push, head_ the next to take, position p lives in slot
// p & mask_. Only the owner writes tail_ (plain release stores); every consumer, the
// owner's Pop() included, moves head_ forward with a CAS, so each position is taken by
// exactly one consumer: the one whose CAS moved head_ past it.
//
// Invariants: head_ and tail_ only grow; head_ <= tail_ <= head_ + capacity; the
// entries of positions [head_, tail_) are in their slots; the owner writes the slot of
// position p only after it has seen head_ > p - capacity, i.e. after the entry of
// p - capacity has been taken.
//
// Push (owner):
//   1. t = tail_ (relaxed: its own variable); h = head_ (acquire: pairs with the release
//      CAS of Pop step 3 and Grab step 5).
//   2. t - h == capacity: full; return false.
//   3. Store the entry in slot(t) (relaxed), then tail_ = t + 1 (release: pairs with
//      the acquire load of tail_ in Grab step 1).
//   No read-modify-write is needed because nobody else writes tail_ or a free slot:
//   consumers write only head_, and the slot of t is free (its previous entry, of
//   t - capacity, was taken: head_ > t - capacity was seen in step 1). A stale h only
//   makes the queue look fuller than it is, never emptier.
// Pop (owner):
//   1. h = head_ (relaxed: a guess decided by the CAS); t = tail_ (its own).
//   2. h == t: empty; return 0.
//   3. Read slot(h) (relaxed), then CAS head_ h -> h + 1 (release on success). Won:
//      return the entry. Lost (a thief took h): the CAS reloads h; go to 2.
//   The slot read is the owner's own earlier store: the owner overwrites slot(h) only
//   for position h + capacity, after seeing head_ > h, and once it has seen that, a
//   later load of head_ cannot return h again (read-read coherence), so a Pop that
//   read h still finds the entry of h there.
// Grab (any thread):
//   1. h = head_ (acquire: pairs with the release CAS of other consumers, so the tail_
//      read next is at least the tail_ they saw, which was >= h); t = tail_ (acquire:
//      pairs with Push step 3, making the entries of [h, t) and their referents
//      visible).
//   2. t < h or t - h > capacity: an inconsistent snapshot (between the two loads,
//      others took entries past h and the owner pushed more); retry from 1. (t < h
//      cannot happen by the acquire above; it is retried rather than trusted.)
//   3. n = t - h; 0: empty, return 0. n = ceil(n / 2) when taking half, else 1; at most
//      `max`.
//   4. Copy slots [h, h + n) to out (relaxed loads: speculative, see below).
//   5. CAS head_ h -> h + n (release on success: pairs with Push step 1, so our slot
//      reads happen-before the owner overwrites those slots). Won: return n. Lost: the
//      copies may be stale or taken by someone else; discard them, retry from 1.
//
// Why a speculative read is harmless. Between step 1 and step 5 the owner may pop or
// see the slots taken by another thief and push over them, so a slot a thief copies may
// be changing under it. The copies count only if the CAS succeeds, and then they are
// the entries of [h, h + n): to overwrite slot(p), p in [h, h + n), the owner must have
// seen head_ > p >= h; head_ only grows (64 bits: no ABA), so head_ had left h and the
// CAS from h fails. Formally: head_ changes only by RMWs, so the value the owner saw
// was written by our own CAS or by one after it in head_'s modification order, which
// continues our release sequence; our CAS therefore synchronizes-with the owner's
// acquire load, our slot read happens-before its overwrite, and coherence forbids the
// read from seeing the overwrite. Conversely the read sees at least the entry of p,
// whose store happens-before it through tail_ (step 1). The slots are atomics (relaxed)
// only so that a read racing with the owner's overwrite is not a data race (undefined
// behaviour, and a TSan report); the ordering comes from head_ and tail_.
//
// Pop against Grab. Both take by a CAS of head_ from the value they read, so for each
// position exactly one CAS wins and the loser retries with the new head. The owner's
// Pop pays one uncontended CAS per entry; the single-producer side (Push) pays none.
//
// Happens-before of an entry's referent. Push's release store of tail_ is read (or
// passed by a later release store of the owner) by Grab's acquire load of tail_: the
// push, and everything its caller did before it, happens-before the Grab that returns
// the entry. Pop runs on the pushing thread: program order.
//
// Deviations from Go. (a) 64-bit positions instead of uint32 ones, so a wrapped tail
// can never make tail - head look small, and head_ cannot return to an old value while
// a thief is preempted between its loads and its CAS (ABA). (b) Go's runqgrab sleeps
// briefly before stealing a P's runnext; there is no runnext here. (c) Go's runqput
// moves half the queue to the global queue itself when full (runqputslow); here Push
// fails and the caller decides (it may Grab() half of its own queue and put it
// elsewhere). (d) Grab takes at most `max` entries rather than always half.
//
// Rejected alternatives.
// - Chase-Lev work-stealing deque: the owner pops LIFO from the tail, which needs a
//   seq_cst fence (or a CAS on the last entry) on every pop to resolve races with
//   thieves, and its thieves take one entry per CAS. Go's scheduler wants FIFO for
//   fairness, and steals of half amortize the thief's cache misses.
// - The MPMC RunQueue: a CAS on every push and a sequence word per slot, paying for
//   multiple producers the local queue never has.
// - Non-atomic slots with a seqlock-style validation (as Go does, relying on its own
//   memory model): a data race in C++; relaxed atomics compile to the same plain moves.

#include "runtime/internal/queues/local_queue.h"

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
      PowerOfTwoError("LocalQueue capacity ", capacity, kMinLocalQueueCapacity, kMaxLocalQueueCapacity);
  CHECK(error.empty()) << error;
  return capacity;
}

}  // namespace

std::string ValidateLocalQueueCapacity(std::uint64_t capacity) {
  return PowerOfTwoError("--fiber_v2_local_queue_size=", capacity, kMinLocalQueueCapacity, kMaxLocalQueueCapacity);
}

LocalQueue::LocalQueue(std::size_t capacity, int numa_node)
    : capacity_(CheckedCapacity(capacity)),
      mask_(capacity - 1),
      slots_(static_cast<Slot*>(AllocateNodeMemory(capacity * sizeof(Slot), numa_node))) {
  for (std::size_t i = 0; i < capacity_; ++i) {
    // A non-atomic initialization: the queue is not shared yet; whoever hands it to
    // other threads provides the happens-before edge for its construction.
    new (&slots_[i]) Slot(0);
  }
}

LocalQueue::~LocalQueue() {
#ifdef SPINDLE_MODEL_CHECK
  // A model's slots are Relacy's atomics, which must be destroyed.
  for (std::uint64_t i = 0; i < capacity_; ++i) slots_[i].~Slot();
#else
  static_assert(std::is_trivially_destructible_v<Slot>, "slots are freed unseen");
#endif
  FreeNodeMemory(slots_, capacity_ * sizeof(Slot));
}

std::size_t LocalQueue::Grab(std::uintptr_t* out, std::size_t max, bool half) {
  if (max == 0) return 0;
  for (;;) {
    // Step 1. acquire: pairs with the release CAS of head_ by other consumers (Pop(),
    // Grab()), so the tail_ loaded next is not behind the head we start from.
    const std::uint64_t head = head_.load(std::memory_order_acquire);
    // acquire: pairs with the release store of tail_ in Push(): the entries of
    // [head, tail) and their referents are visible.
    const std::uint64_t tail = tail_.load(std::memory_order_acquire);
    // Step 2: head is stale by more than a lap (others took entries and the owner
    // pushed more between the two loads), or the impossible tail < head.
    if (tail < head || tail - head > capacity_) {
      CpuRelax();
      continue;
    }
    const std::uint64_t size = tail - head;
    if (size == 0) return 0;
    const std::size_t n = static_cast<std::size_t>(
        std::min<std::uint64_t>(half ? size - size / 2 : 1, max));
    for (std::size_t i = 0; i < n; ++i) {
      // relaxed: a speculative copy, valid only if the CAS below succeeds (then no
      // overwrite can be visible to it; see "Why a speculative read is harmless").
      out[i] = SlotAt(head + i).load(std::memory_order_relaxed);
    }
    std::uint64_t expected = head;
    // release on success: pairs with the acquire load of head_ in Push(), so the reads
    // above happen-before the owner overwrites these slots, and with the acquire load
    // of head_ here in other Grab() calls. relaxed on failure: we start over.
    if (head_.compare_exchange_strong(expected, head + n, std::memory_order_release,
                                      std::memory_order_relaxed)) {
      return n;
    }
    CpuRelax();
  }
}

std::size_t LocalQueue::UnsafeSize() const {
  // head_ first, acquire: pairs with the release CAS of head_ in Pop() and Grab(), so a
  // head_ moved by a take brings the pushes before it, and tail_ read afterwards is not
  // behind it (StrategyV2::SwapOnYield's push-then-pop relies on that: a reader never
  // sees its ring empty). relaxed tail_: a snapshot; the clamps cover one more than a
  // lap ahead of a stale head_.
  const std::uint64_t head = head_.load(std::memory_order_acquire);
  const std::uint64_t tail = tail_.load(std::memory_order_relaxed);
  if (tail <= head) return 0;
  return static_cast<std::size_t>(std::min<std::uint64_t>(tail - head, capacity_));
}

}  // namespace spindle::internal
