// Copyright 2026 The Spindle Authors.
//
// The relaxed-FIFO queue of strategy "relaxed" (seed 001: Thierry Delisle's thesis,
// chapter "Scheduling Core", which builds on Rihani, Sanders and Dementiev's
// MultiQueues). Our own implementation.
//
// The problem. One FIFO queue shared by every worker is fair (the oldest ready fiber
// runs first) but every push and pop writes the same two cache lines (v1 pays for that
// from 2 workers on). Per-worker queues with stealing (v2) are fast, but a fiber queued
// behind a busy worker waits however long that worker's queue is, and nothing bounds
// how far it falls behind fibers queued later elsewhere.
//
// The structure. `count_` lists (the strategy makes it workers x a factor), each on its
// own cache line: a spinlock, a ring of items (value, stamp) that grows by doubling,
// and `head_stamp`, the cycle-clock stamp of the list's oldest item (kEmpty when it has
// none), written under the lock and read without it as a hint.
//   Push. Pick a list with the caller's forward generator F (one step per try); if its
//     lock is free (try_lock), append the value stamped with the clock (read under the
//     lock, so a list's items are in stamp order) and copy F into
//     the backward generator B. After kPushTries busy lists, wait for the last one's
//     lock (the thesis retries forever; a bound keeps a push from spinning while every
//     lock it draws is held by preempted threads).
//   Pop. Pick two lists with B, stepping it back once per pick; read both head stamps;
//     try_lock the older (the lower stamp) and take its head, else the other one. Up
//     to kPopTries pairs. Then a sweep: every list from a random one, taking the lock
//     of each that looks non-empty. The thesis retries random pairs forever; a fiber
//     runtime needs an exact answer to "is anything queued?" before a worker sleeps,
//     and a bound on a pop that misses (a few empty lists among many), so the sweep.
//   Dynamic entropy. Because a pop replays B backwards from the last push, a worker's
//     first pick after it queued a fiber is the list it queued it on, its second the
//     list of the push before. With about as many ready fibers as workers (T = P + e),
//     each worker mostly takes back what it queued (locality: the fiber's stack and
//     data are still in its cache); as the queue fills, the picks drift away from the
//     last pushes and are as random as without it (fairness). The generators are a
//     64-bit LCG, which steps back with the multiplicative inverse.
//
// Where we depart from the thesis, and why.
//   - Items sit in rings, not intrusive linked lists: queue entries are tagged words
//     (a FiberEntity or a FiberDesc), some of which have no room for a link (a
//     descriptor is 96 bytes and full), and a ring keeps a list's items on few lines.
//   - The head stamp is that of the oldest item, not of the list's last operation:
//     the two-choice comparison is about which ready fiber has waited longest.
//   - The bitmask, tree and per-worker emptiness hints the thesis tried and dropped are
//     not built (it found that their cache traffic cost more than the misses they
//     save); the sweep is only reached after kPopTries pairs missed.
//   - A worker's cursor has a home: its own lists_per_worker lists. Its pushes try
//     two of them before any list, and each of its pop's pairs is a home list and a
//     list outside its home (so every pop still compares against a random sibling's
//     list, and a fiber queued anywhere is taken when it is older). The
//     thesis' pushes go to any list: on fork-join (a fiber starts children and joins
//     them, running inline those nobody took) both workers' pushes, pops and
//     take-backs then meet on the same few lists, spinning on each other's list locks
//     and missing the cache in TakeBack's compares, so a second worker gains nothing.
//     With homes a worker's own children stay on lines it alone writes unless a
//     sibling takes one, which takes the list's oldest (a thief's best piece in a
//     fork-join tree). Plain threads' cursors have no home.
//   - PushUrgent() is ours: a fiber woken by a timer is already late (behind a
//     burst of started fibers, stamped by readiness it would wait for all of them), so
//     it goes to the head of its list with
//     stamp 0, as v2 runs timer rounds ahead of its local queues. A list stays in stamp
//     order (nothing is older than 0), so pops and the invariant below are unchanged.
//   - Steal() and TakeBack() are ours. Stealing between groups must leave
//     scheduling_group_local fibers in their group without letting them hide the
//     stealable ones behind them: a thief looks up to kStealLookahead items deep into
//     lists whose count of stealable items is not 0, and takes them out of the middle
//     (StealMany: up to half of each list).
//     A joiner takes back the children it ran inline: each cursor remembers its last
//     kRecentPushes pushes and their lists, and TakeBack() looks for the value near
//     both ends of its list (without it, a fiber that starts and joins children in a
//     loop on a worker nobody else pops from queued dead entries without bound).
//
// Invariant: a list's head_stamp is kEmpty exactly when the list held no item at the
// end of its last critical section; it is written before the unlock. So a reader whose
// load is ordered after a push (a fence on both sides, or a happens-before edge) sees
// that list as non-empty unless a pop emptied it since.

#include "runtime/internal/queues/relaxed_queue.h"

#include <algorithm>
#include <mutex>
#include <new>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/cycle_clock.h"
#include "glog/logging.h"
#include "runtime/internal/base/topology.h"

namespace spindle::internal {
namespace {

constexpr std::uint64_t kEmpty = ~std::uint64_t{0};
// A list's first ring; a ring that empties above kShrinkAbove items is freed.
constexpr std::size_t kInitialCapacity = 16;
constexpr std::size_t kShrinkAbove = 4096;

// Knuth's MMIX LCG. Stepped forward by Push(), backward by Pop().
constexpr std::uint64_t kLcgMultiplier = 6364136223846793005ULL;
constexpr std::uint64_t kLcgIncrement = 1442695040888963407ULL;

constexpr std::uint64_t InverseOf(std::uint64_t a) {
  // Newton's iteration for a^-1 mod 2^64: x = a is right in its low 3 bits (a odd), and
  // each step doubles the correct bits (3, 6, 12, 24, 48, 96).
  std::uint64_t x = a;
  for (int i = 0; i < 5; ++i) x *= 2 - a * x;
  return x;
}
constexpr std::uint64_t kLcgInverse = InverseOf(kLcgMultiplier);
static_assert(kLcgMultiplier * kLcgInverse == 1, "the LCG must step back exactly");

std::uint64_t StepForward(std::uint64_t& state) {
  state = state * kLcgMultiplier + kLcgIncrement;
  return state;
}

// Returns the state to step back from, and moves `state` one step back.
std::uint64_t StepBackward(std::uint64_t& state) {
  const std::uint64_t current = state;
  state = (state - kLcgIncrement) * kLcgInverse;
  return current;
}

}  // namespace

struct RelaxedQueue::Item {
  std::uintptr_t value;
  std::uint64_t stamp_word;  // stamp << 1 | stealable
};

struct alignas(64) RelaxedQueue::List {
  Spinlock lock;
  // The oldest item's stamp, or kEmpty. Written under `lock` (relaxed: readers use it
  // as a hint and re-check under the lock; whoever needs it to include a push orders
  // the read with a fence, see the invariant at the top).
  std::atomic<std::uint64_t> head_stamp{kEmpty};
  // Mirrors of `count` and `stealable_count` for readers without the lock (relaxed:
  // UnsafeSize()'s snapshot; thieves skip lists without a stealable item, a hint).
  std::atomic<std::size_t> size{0};
  std::atomic<std::size_t> stealable{0};
  Item* items ABSL_GUARDED_BY(lock) ABSL_PT_GUARDED_BY(lock) = nullptr;
  std::size_t capacity ABSL_GUARDED_BY(lock) = 0;  // 0 or a power of two
  std::size_t head ABSL_GUARDED_BY(lock) = 0;
  std::size_t count ABSL_GUARDED_BY(lock) = 0;
  std::size_t stealable_count ABSL_GUARDED_BY(lock) = 0;  // items with the stealable bit
};

RelaxedQueue::RelaxedQueue(std::size_t lists, int numa_node, DeadCheck is_dead)
    : count_(lists), is_dead_(is_dead) {
  CHECK(lists >= 1 && lists <= kMaxLists)
      << "a relaxed queue has 1 to " << kMaxLists << " lists, not " << lists;
  void* memory = AllocateOnNode(sizeof(List) * count_, numa_node);
  lists_ = static_cast<List*>(memory);
  for (std::size_t i = 0; i < count_; ++i) {
    new (&lists_[i]) List();
    // Its first ring now: a list a push reaches for the first time (any list, for a
    // thread with no home in the queue) allocates nothing on that push.
    lists_[i].items = new Item[kInitialCapacity];
    lists_[i].capacity = kInitialCapacity;
  }
}

RelaxedQueue::~RelaxedQueue() {
  for (std::size_t i = 0; i < count_; ++i) {
    delete[] lists_[i].items;
    lists_[i].~List();
  }
  FreeOnNode(lists_, sizeof(List) * count_);
}

std::size_t RelaxedQueue::Lane(std::uint64_t random) const {
  // The LCG's high bits are its good ones; multiply-shift maps them onto [0, count_).
  return static_cast<std::size_t>(((random >> 32) * count_) >> 32);
}

std::size_t RelaxedQueue::HomeLane(const RelaxedCursor& cursor, std::uint64_t random) {
  return cursor.home_first +
         static_cast<std::size_t>(((random >> 32) * cursor.home_count) >> 32);
}

std::size_t RelaxedQueue::ForeignLane(const RelaxedCursor& cursor, std::uint64_t random) const {
  const std::size_t others = count_ - cursor.home_count;
  const std::size_t k = static_cast<std::size_t>(((random >> 32) * others) >> 32);
  return k < cursor.home_first ? k : k + cursor.home_count;
}

void RelaxedQueue::PublishLocked(List& list) ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  // relaxed: see List::head_stamp and List::size; written before the unlock.
  list.head_stamp.store(list.count == 0 ? kEmpty : list.items[list.head].stamp_word >> 1,
                        std::memory_order_relaxed);
  list.size.store(list.count, std::memory_order_relaxed);
  list.stealable.store(list.stealable_count, std::memory_order_relaxed);
}

void RelaxedQueue::CompactLocked(List& list) ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  const std::size_t mask = list.capacity - 1;
  std::size_t kept = 0;
  for (std::size_t i = 0; i < list.count; ++i) {
    const Item item = list.items[(list.head + i) & mask];
    if (is_dead_(item.value)) {
      list.stealable_count -= item.stamp_word & 1;
      continue;
    }
    list.items[(list.head + kept++) & mask] = item;
  }
  list.count = kept;
  PublishLocked(list);
}

void RelaxedQueue::AppendLocked(List& list, std::uintptr_t value, bool stealable)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  ReserveOneLocked(list);
  const std::uint64_t stamp_word = (CycleClockNow() << 1) | (stealable ? 1 : 0);
  list.items[(list.head + list.count) & (list.capacity - 1)] = Item{value, stamp_word};
  ++list.count;
  list.stealable_count += stealable ? 1 : 0;
  PublishLocked(list);
}

void RelaxedQueue::PrependLocked(List& list, std::uintptr_t value, bool stealable)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  ReserveOneLocked(list);
  // Stamp 0: no item is older, so the list stays in stamp order with this at its head.
  list.head = (list.head + list.capacity - 1) & (list.capacity - 1);
  list.items[list.head] = Item{value, stealable ? 1u : 0u};
  ++list.count;
  list.stealable_count += stealable ? 1 : 0;
  PublishLocked(list);
}

void RelaxedQueue::ReserveOneLocked(List& list) ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  // relaxed: see NoteDeadEntries(). Compacting only when the list would grow, and
  // growing anyway unless it freed a quarter of the ring, keeps its cost at a constant
  // per push (amortized over the ring's size), and the dead values at most about one
  // list's worth.
  bool grow = list.count == list.capacity;
  if (grow && list.count != 0 && is_dead_ != nullptr &&
      dead_entries_.load(std::memory_order_relaxed)) {
    CompactLocked(list);
    grow = list.count > list.capacity / 4 * 3;
  }
  if (grow) {
    const std::size_t capacity = list.capacity == 0 ? kInitialCapacity : list.capacity * 2;
    Item* items = new Item[capacity];
    for (std::size_t i = 0; i < list.count; ++i) {
      items[i] = list.items[(list.head + i) & (list.capacity - 1)];
    }
    delete[] list.items;
    list.items = items;
    list.capacity = capacity;
    list.head = 0;
  }
}

void RelaxedQueue::Record(RelaxedCursor& cursor, std::uintptr_t value, std::size_t list) {
  cursor.recent[cursor.pushes & (RelaxedCursor::kRecentPushes - 1)] = {value, list};
  ++cursor.pushes;
}

// Not analysed: the list is locked by a try_lock loop or, when every try failed, by
// lock(), two paths the analysis cannot join.
std::size_t RelaxedQueue::LockPushLane(RelaxedCursor& cursor) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  std::size_t lane = 0;
  bool locked = false;
  const bool home = HasHome(cursor);
  for (int attempt = 0; attempt < kPushTries && !locked; ++attempt) {
    const std::uint64_t random = StepForward(cursor.forward);
    lane = home && attempt < kHomePushTries ? HomeLane(cursor, random) : Lane(random);
    locked = lists_[lane].lock.try_lock();
  }
  if (!locked) lists_[lane].lock.lock();  // every list tried was busy: wait for the last
  cursor.backward = cursor.forward;
  return lane;
}

void RelaxedQueue::Push(RelaxedCursor& cursor, std::uintptr_t value, bool stealable)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  DCHECK_NE(value, 0u);
  const std::size_t lane = LockPushLane(cursor);
  AppendLocked(lists_[lane], value, stealable);
  lists_[lane].lock.unlock();
  Record(cursor, value, lane);
}

void RelaxedQueue::PushUrgent(RelaxedCursor& cursor, std::uintptr_t value, bool stealable)
    ABSL_NO_THREAD_SAFETY_ANALYSIS {
  DCHECK_NE(value, 0u);
  const std::size_t lane = LockPushLane(cursor);
  PrependLocked(lists_[lane], value, stealable);
  lists_[lane].lock.unlock();
}

std::uintptr_t RelaxedQueue::PopLocked(List& list) ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  const std::uintptr_t value = list.items[list.head].value;
  list.stealable_count -= list.items[list.head].stamp_word & 1;
  list.head = (list.head + 1) & (list.capacity - 1);
  --list.count;
  PublishLocked(list);
  if (list.count == 0 && list.capacity > kShrinkAbove) {
    // A burst is over: give its ring back rather than keep it for good.
    delete[] list.items;
    list.items = nullptr;
    list.capacity = 0;
    list.head = 0;
  }
  return value;
}

std::uintptr_t RelaxedQueue::RemoveLocked(List& list, std::size_t k)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(list.lock) {
  const std::size_t mask = list.capacity - 1;
  if (k < list.count / 2 + 1) {
    // Nearer the head: the k older items move one place towards the tail.
    const Item item = list.items[(list.head + k) & mask];
    for (std::size_t m = k; m > 0; --m) {
      list.items[(list.head + m) & mask] = list.items[(list.head + m - 1) & mask];
    }
    list.items[list.head] = item;
    return PopLocked(list);
  }
  // Nearer the tail: the newer items move one place towards the head.
  const Item item = list.items[(list.head + k) & mask];
  for (std::size_t m = k; m + 1 < list.count; ++m) {
    list.items[(list.head + m) & mask] = list.items[(list.head + m + 1) & mask];
  }
  --list.count;
  list.stealable_count -= item.stamp_word & 1;
  PublishLocked(list);
  return item.value;
}

std::uintptr_t RelaxedQueue::TryPopFrom(List& list) {
  if (!list.lock.try_lock()) return 0;
  const std::uintptr_t value = list.count == 0 ? 0 : PopLocked(list);
  list.lock.unlock();
  return value;
}

std::uintptr_t RelaxedQueue::Pop(RelaxedCursor& cursor) {
  const bool home = HasHome(cursor);
  for (int attempt = 0; attempt < kPopTries; ++attempt) {
    // With a home, the first pick replays a push to it (Push()'s home tries map the
    // same generator values the same way), the second is a list outside it (when the
    // queue has any): a pair of two home lists compares nothing a sibling queued, and
    // an idle worker, whose home is empty, would waste half its picks on it (the
    // sibling falls behind a spawner, and the queue grows).
    const std::uint64_t random = StepBackward(cursor.backward);
    const std::size_t a = home ? HomeLane(cursor, random) : Lane(random);
    std::size_t b = home && cursor.home_count < count_
                        ? ForeignLane(cursor, StepBackward(cursor.backward))
                        : Lane(StepBackward(cursor.backward));
    // Two different lists: with two lists in all (one worker) every pop then compares
    // both heads, and the oldest ready fiber always runs first.
    if (b == a && count_ > 1) b = a + 1 == count_ ? 0 : a + 1;
    // relaxed: hints, re-checked under the lock.
    const std::uint64_t stamp_a = lists_[a].head_stamp.load(std::memory_order_relaxed);
    const std::uint64_t stamp_b = lists_[b].head_stamp.load(std::memory_order_relaxed);
    if (stamp_a == kEmpty && stamp_b == kEmpty) continue;
    // The older head first (the thesis' two choices); an empty list's kEmpty is last.
    const bool a_first = stamp_a <= stamp_b;
    const std::size_t first = a_first ? a : b;
    const std::size_t second = a_first ? b : a;
    if (std::uintptr_t value = TryPopFrom(lists_[first])) return value;
    if (first != second && (a_first ? stamp_b : stamp_a) != kEmpty) {
      if (std::uintptr_t value = TryPopFrom(lists_[second])) return value;
    }
  }
  return Sweep(Lane(StepBackward(cursor.backward)));
}

std::uintptr_t RelaxedQueue::Sweep(std::size_t start) {
  for (std::size_t i = 0; i < count_; ++i) {
    std::size_t lane = start + i;
    if (lane >= count_) lane -= count_;
    List& list = lists_[lane];
    // relaxed: a hint; see the invariant at the top for what it must include.
    if (list.head_stamp.load(std::memory_order_relaxed) == kEmpty) continue;
    SpinlockGuard hold(list.lock);
    if (list.count != 0) return PopLocked(list);
  }
  return 0;
}

std::size_t RelaxedQueue::StealMany(std::size_t start, std::uintptr_t* out,
                                    std::size_t max) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < count_ && n < max; ++i) {
    List& list = lists_[(start + i) % count_];
    // relaxed: a hint; a thief that misses a push only steals less.
    if (list.stealable.load(std::memory_order_relaxed) == 0) continue;
    if (!list.lock.try_lock()) continue;
    // Half of this list (rounded up), so that the lists keep their relative lengths.
    const std::size_t want = n + std::min(max - n, (list.count + 1) / 2);
    // k counts the values skipped so far (each removal moves the later ones up).
    for (std::size_t k = 0; n < want && k < std::min(list.count, kStealLookahead);) {
      // Skip scheduling_group_local values: they stay, in their order.
      if ((list.items[(list.head + k) & (list.capacity - 1)].stamp_word & 1) == 0) {
        ++k;
        continue;
      }
      out[n++] = RemoveLocked(list, k);
    }
    list.lock.unlock();
  }
  return n;
}

bool RelaxedQueue::TakeBack(RelaxedCursor& cursor, std::uintptr_t value) {
  // The newest push first (a child joined right after it was started). A plain
  // compare per push: a predicate called through a FunctionRef makes every miss dear.
  const std::size_t recorded = std::min(cursor.pushes, RelaxedCursor::kRecentPushes);
  for (std::size_t n = 1; n <= recorded; ++n) {
    RelaxedCursor::Push& push =
        cursor.recent[(cursor.pushes - n) & (RelaxedCursor::kRecentPushes - 1)];
    // A plain thread's cursor serves every group: its list may be another queue's.
    if (push.value != value || push.list >= count_) continue;
    List& list = lists_[push.list];
    bool found = false;
    {
      SpinlockGuard hold(list.lock);
      const std::size_t mask = list.capacity - 1;
      // The ends only: the newest end first (a child joined right after it was
      // started; the oldest end of a long list is cold), then the oldest (children
      // joined in start order).
      const std::size_t tail_window = std::min(list.count, kTakeBackWindow);
      const std::size_t head_window = std::min(list.count - tail_window, kTakeBackWindow);
      for (std::size_t i = 0; i < tail_window + head_window && !found; ++i) {
        const std::size_t k = i < tail_window ? list.count - 1 - i : i - tail_window;
        if (list.items[(list.head + k) & mask].value == value) {
          RemoveLocked(list, k);
          found = true;
        }
      }
    }
    if (found) push.value = 0;
    return found;  // kept if not: a later call may find it at the head
  }
  return false;
}

bool RelaxedQueue::UnsafeEmpty() const {
  for (std::size_t i = 0; i < count_; ++i) {
    // relaxed: a snapshot (see the invariant at the top).
    if (lists_[i].head_stamp.load(std::memory_order_relaxed) != kEmpty) return false;
  }
  return true;
}

bool RelaxedQueue::UnsafeHasStealable() const {
  for (std::size_t i = 0; i < count_; ++i) {
    // relaxed: a snapshot.
    if (lists_[i].stealable.load(std::memory_order_relaxed) != 0) return true;
  }
  return false;
}

std::size_t RelaxedQueue::UnsafeListSize(std::size_t list) const {
  DCHECK_LT(list, count_);
  return lists_[list].size.load(std::memory_order_relaxed);  // relaxed: a snapshot
}

std::size_t RelaxedQueue::UnsafeSize() const {
  std::size_t size = 0;
  // relaxed: a snapshot.
  for (std::size_t i = 0; i < count_; ++i) size += lists_[i].size.load(std::memory_order_relaxed);
  return size;
}

}  // namespace spindle::internal
