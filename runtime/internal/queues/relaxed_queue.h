// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_RELAXED_QUEUE_H_
#define SPINDLE_RUNTIME_INTERNAL_RELAXED_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/spinlock.h"

namespace spindle::internal {

// One caller's pair of pseudo-random generators over a RelaxedQueue's lists (seed 001's
// "dynamic entropy": F and B). Push() steps `forward` once per list it tries and, on
// success, copies it into `backward`; Pop() steps `backward` back once per list it
// looks at, so a caller's first pick after a push is the list it pushed to, then the
// one before that, and so on. Owned by one thread (a worker, or a plain thread's
// thread_local); never shared.
//
// It also remembers its last kRecentPushes pushes (value and list), so that a joiner
// can take back a child it ran inline from wherever it was queued (TakeBack()).
struct RelaxedCursor {
  // A power of two. Every take-back scans them (a miss scans all), so a long list
  // makes fork-join spend its time in TakeBack; children beyond the last few are left
  // to the dead-entry compaction.
  static constexpr std::size_t kRecentPushes = 8;
  explicit RelaxedCursor(std::uint64_t seed = 0x9E3779B97F4A7C15ULL)
      : forward(seed), backward(seed) {}
  // A worker's cursor: lists [first, first + count) are its home (RelaxedQueue::Push
  // and Pop say how they use it). count 0: no home, every pick is over all lists (a
  // plain thread's cursor, and the thesis' behaviour).
  RelaxedCursor(std::uint64_t seed, std::size_t first, std::size_t count)
      : forward(seed), backward(seed), home_first(first), home_count(count) {}
  std::uint64_t forward;
  std::uint64_t backward;
  std::size_t home_first = 0;
  std::size_t home_count = 0;
  struct Push {
    std::uintptr_t value = 0;  // 0: none (or taken back)
    std::size_t list = 0;
  };
  Push recent[kRecentPushes];
  std::size_t pushes = 0;  // how many were recorded; the newest is at pushes - 1
};

// A relaxed-FIFO queue of non-zero words (seed 001, "Scheduling Core": an array of
// small strictly-FIFO lists, each with a lock and the timestamp of its oldest item).
// Push() appends to a random list whose lock is free (one of the cursor's home lists
// first, if it has them); Pop() looks at the heads of two lists (a home one and a
// random one, or two random ones) and takes the older. The design, and where it
// departs from the thesis, are at the top of relaxed_queue.cc.
//
// Lists grow as needed: nothing is ever refused, and nothing is dropped except values
// that `is_dead` (if given) reports as dead once NoteDeadEntries() was called: a list
// about to grow drops those first. Each value carries a `stealable` bit for Steal().
//
// Thread-safety: every method from any thread. Values are only stored and compared,
// never dereferenced. The queue must be empty of anything the caller cares about when
// destroyed (it frees its buffers, not what the values refer to).
class RelaxedQueue {
 public:
  static constexpr std::size_t kMaxLists = 4096;
  // Pairs of lists Pop() tries (two-choice) before it sweeps every list.
  static constexpr int kPopTries = 2;
  // Lists Push() tries with try_lock before it waits for the last one's lock.
  static constexpr int kPushTries = 4;
  // Of those, how many are among the cursor's home lists (if it has them).
  static constexpr int kHomePushTries = 2;
  // How far Steal() looks past a list's head for a stealable value.
  static constexpr std::size_t kStealLookahead = 256;
  // How far TakeBack() looks from either end of a list for a value.
  static constexpr std::size_t kTakeBackWindow = 8;

  // For a queued value: true if it is dead, after releasing whatever the queue held of
  // it (the value is then gone). Called under a list's lock; must not block.
  using DeadCheck = bool (*)(std::uintptr_t value);

  // `lists` in [1, kMaxLists]; the list headers are allocated on `numa_node` (or
  // anywhere with kNoNumaNode).
  RelaxedQueue(std::size_t lists, int numa_node, DeadCheck is_dead = nullptr);
  ~RelaxedQueue();
  RelaxedQueue(const RelaxedQueue&) = delete;
  RelaxedQueue& operator=(const RelaxedQueue&) = delete;

  // Appends `value` (non-zero) to one list, stamped with the cycle clock: the first
  // kHomePushTries tries are among the cursor's home lists (if it has them), the rest
  // among all lists. Never fails;
  // may allocate (a list that is full doubles). On return the value is visible to any
  // Pop()/UnsafeEmpty() that is ordered after the return.
  void Push(RelaxedCursor& cursor, std::uintptr_t value, bool stealable);

  // Push() for a value that should run ahead of the others (a fiber woken by a timer,
  // already late): prepended to the list chosen as Push() chooses, with the oldest
  // possible stamp, so two-choice pops prefer its list and the list yields it first
  // (the list stays in stamp order). Not recorded for TakeBack().
  void PushUrgent(RelaxedCursor& cursor, std::uintptr_t value, bool stealable);

  // Takes a value, or returns 0. Two-choice picks first (kPopTries pairs, through the
  // cursor's backward generator; with a home, the first of each pair is a home list and
  // the second one outside it), then one sweep over every list from a random one:
  // 0 means every list was seen empty during the sweep (each head read after the call
  // began). Never blocks for longer than other callers' critical sections.
  std::uintptr_t Pop(RelaxedCursor& cursor);

  // For a thief (another group's worker): the first stealable value among the first
  // kStealLookahead values of a list, trying lists that hold a stealable value from
  // `start` on (mod the count) with try_lock; the others keep their order. 0 if none
  // was found.
  std::uintptr_t Steal(std::size_t start) {
    std::uintptr_t value = 0;
    return StealMany(start, &value, 1) != 0 ? value : 0;
  }
  // Steal() for up to `max` (>= 1) values: from each list in turn from `start` on (as
  // Steal() picks them), up to half of what it holds (rounded up), its oldest stealable
  // ones among the first kStealLookahead, each list's oldest first, into out[]. How
  // many. The lists are many and short (a list per few fibers), so half of the queue,
  // not half of one list, makes a batch.
  std::size_t StealMany(std::size_t start, std::uintptr_t* out, std::size_t max);

  // For a joiner taking back a child it ran inline: if `value` is among the cursor's
  // recent pushes, looks for it within kTakeBackWindow of either end of the list it went
  // to and, if it is there, removes it (the others keep their order). Whether it did. A
  // value already popped, or pushed too long ago, is not found: nothing happens.
  bool TakeBack(RelaxedCursor& cursor, std::uintptr_t value);

  // Some queued value may be dead (a joiner ran its fiber inline and could not take it
  // back): from now on a list that is full drops its dead values before it grows.
  void NoteDeadEntries() {
    // relaxed load first: usually set already. relaxed store: a hint; a growth that
    // misses it only grows.
    if (!dead_entries_.load(std::memory_order_relaxed)) {
      dead_entries_.store(true, std::memory_order_relaxed);
    }
  }

  // Relaxed snapshots: whether every list looked empty; the values queued; whether a
  // stealable value is queued. A caller that needs them to include a push orders its
  // read after that push with a fence.
  bool UnsafeEmpty() const;
  std::size_t UnsafeSize() const;
  bool UnsafeHasStealable() const;
  std::size_t UnsafeListSize(std::size_t list) const;  // list < lists()
  std::size_t lists() const { return count_; }

 private:
  struct Item;
  // Its fields are ABSL_GUARDED_BY its lock; the *Locked helpers below require that
  // lock (ABSL_EXCLUSIVE_LOCKS_REQUIRED) on their definitions in relaxed_queue.cc, since
  // List is incomplete here.
  struct List;

  std::size_t Lane(std::uint64_t random) const;
  // Whether the cursor has a home in this queue (one that does not fit, a cursor of a
  // group with more lists, is none).
  bool HasHome(const RelaxedCursor& cursor) const {
    return cursor.home_count != 0 && cursor.home_first + cursor.home_count <= count_;
  }
  // A list of the cursor's home (which it has) for `random`; one outside it (which
  // exists).
  static std::size_t HomeLane(const RelaxedCursor& cursor, std::uint64_t random);
  std::size_t ForeignLane(const RelaxedCursor& cursor, std::uint64_t random) const;
  // Under the list's lock: removes and returns its oldest value (the list is not empty).
  static std::uintptr_t PopLocked(List& list);
  // Under the list's lock: removes and returns its k-th oldest value (k < count),
  // moving the values on the nearer side of it by one.
  static std::uintptr_t RemoveLocked(List& list, std::size_t k);
  static void Record(RelaxedCursor& cursor, std::uintptr_t value, std::size_t list);
  // try_lock, and the oldest value if the list holds one; 0 otherwise.
  static std::uintptr_t TryPopFrom(List& list);
  std::uintptr_t Sweep(std::size_t start);
  // Under the list's lock: appends `value`, stamped with the clock now (under the lock,
  // so each list's items are in stamp order and its head is its oldest).
  void AppendLocked(List& list, std::uintptr_t value, bool stealable);
  // Under the list's lock: prepends `value` with stamp 0 (PushUrgent).
  void PrependLocked(List& list, std::uintptr_t value, bool stealable);
  // Under the list's lock: makes room for one more item (compacting or growing).
  void ReserveOneLocked(List& list);
  // Locks a list for a push as Push() chooses it; returns its index.
  std::size_t LockPushLane(RelaxedCursor& cursor);
  // Under the list's lock: drops its dead values, keeping the order of the others.
  void CompactLocked(List& list);
  // Under the list's lock, after any change: the atomics that readers without the lock
  // look at (head stamp, size, stealable count), from the guarded fields.
  static void PublishLocked(List& list);

  const std::size_t count_;
  const DeadCheck is_dead_;
  List* lists_;  // count_ of them, each on its own cache line
  std::atomic<bool> dead_entries_{false};  // see NoteDeadEntries()
};

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_RELAXED_QUEUE_H_
