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
//     lock is free (try_lock), append the value stamped with the clock and copy F into
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
//   - Steal() and TakeBack() are ours: a fiber runtime's stealing between groups must
//     leave scheduling_group_local fibers in their group, and a joiner takes back the
//     children it ran inline.
//
// Invariant: a list's head_stamp is kEmpty exactly when the list held no item at the
// end of its last critical section; it is written before the unlock. So a reader whose
// load is ordered after a push (a fence on both sides, or a happens-before edge) sees
// that list as non-empty unless a pop emptied it since.

#include "runtime/internal/relaxed_queue.h"

#include <algorithm>
#include <mutex>
#include <new>

#include "fiber/internal/cycle_clock.h"
#include "glog/logging.h"
#include "runtime/internal/topology.h"

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
  std::atomic<std::size_t> size{0};  // `count`, for UnsafeSize() (relaxed: a snapshot)
  // Guarded by `lock`.
  Item* items = nullptr;
  std::size_t capacity = 0;  // 0 or a power of two
  std::size_t head = 0;
  std::size_t count = 0;
};

RelaxedQueue::RelaxedQueue(std::size_t lists, int numa_node)
    : count_(lists), numa_node_(numa_node) {
  CHECK(lists >= 1 && lists <= kMaxLists)
      << "a relaxed queue has 1 to " << kMaxLists << " lists, not " << lists;
  void* memory = AllocateOnNode(sizeof(List) * count_, numa_node_);
  lists_ = static_cast<List*>(memory);
  for (std::size_t i = 0; i < count_; ++i) new (&lists_[i]) List();
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

void RelaxedQueue::AppendLocked(List& list, std::uintptr_t value, std::uint64_t stamp_word) {
  if (list.count == list.capacity) {
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
  list.items[(list.head + list.count) & (list.capacity - 1)] = Item{value, stamp_word};
  ++list.count;
  // relaxed: see List::head_stamp; published before the unlock.
  if (list.count == 1) list.head_stamp.store(stamp_word >> 1, std::memory_order_relaxed);
  list.size.store(list.count, std::memory_order_relaxed);
}

void RelaxedQueue::Push(RelaxedCursor& cursor, std::uintptr_t value, bool stealable) {
  DCHECK_NE(value, 0u);
  const std::uint64_t stamp_word = (CycleClockNow() << 1) | (stealable ? 1 : 0);
  std::size_t lane = 0;
  for (int attempt = 0; attempt < kPushTries; ++attempt) {
    lane = Lane(StepForward(cursor.forward));
    if (lists_[lane].lock.try_lock()) {
      AppendLocked(lists_[lane], value, stamp_word);
      lists_[lane].lock.unlock();
      cursor.backward = cursor.forward;
      cursor.last_push = lane;
      return;
    }
  }
  std::lock_guard<Spinlock> hold(lists_[lane].lock);
  AppendLocked(lists_[lane], value, stamp_word);
  cursor.backward = cursor.forward;
  cursor.last_push = lane;
}

std::uintptr_t RelaxedQueue::PopLocked(List& list) {
  const std::uintptr_t value = list.items[list.head].value;
  list.head = (list.head + 1) & (list.capacity - 1);
  --list.count;
  // relaxed: see List::head_stamp.
  list.head_stamp.store(list.count == 0 ? kEmpty : list.items[list.head].stamp_word >> 1,
                        std::memory_order_relaxed);
  list.size.store(list.count, std::memory_order_relaxed);
  if (list.count == 0 && list.capacity > kShrinkAbove) {
    // A burst is over: give its ring back rather than keep it for good.
    delete[] list.items;
    list.items = nullptr;
    list.capacity = 0;
    list.head = 0;
  }
  return value;
}

std::uintptr_t RelaxedQueue::TryPopFrom(List& list) {
  if (!list.lock.try_lock()) return 0;
  const std::uintptr_t value = list.count == 0 ? 0 : PopLocked(list);
  list.lock.unlock();
  return value;
}

std::uintptr_t RelaxedQueue::Pop(RelaxedCursor& cursor) {
  for (int attempt = 0; attempt < kPopTries; ++attempt) {
    const std::size_t a = Lane(StepBackward(cursor.backward));
    const std::size_t b = Lane(StepBackward(cursor.backward));
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
    std::lock_guard<Spinlock> hold(list.lock);
    if (list.count != 0) return PopLocked(list);
  }
  return 0;
}

std::uintptr_t RelaxedQueue::Steal(std::size_t start) {
  for (std::size_t i = 0; i < count_; ++i) {
    List& list = lists_[(start + i) % count_];
    // relaxed: a hint; a thief that misses a push only steals less.
    if (list.head_stamp.load(std::memory_order_relaxed) == kEmpty) continue;
    if (!list.lock.try_lock()) continue;
    const std::size_t look = std::min(list.count, kStealLookahead);
    const std::size_t mask = list.capacity - 1;
    for (std::size_t k = 0; k < look; ++k) {
      const Item item = list.items[(list.head + k) & mask];
      if ((item.stamp_word & 1) == 0) continue;  // scheduling_group_local: stays
      // Close the gap: the k items before it move one place towards the tail.
      for (std::size_t m = k; m > 0; --m) {
        list.items[(list.head + m) & mask] = list.items[(list.head + m - 1) & mask];
      }
      list.items[list.head & mask] = item;
      const std::uintptr_t value = PopLocked(list);
      list.lock.unlock();
      return value;
    }
    list.lock.unlock();
  }
  return 0;
}

void RelaxedQueue::TakeBack(const RelaxedCursor& cursor,
                            absl::FunctionRef<bool(std::uintptr_t)> wanted,
                            absl::FunctionRef<bool(std::uintptr_t)> taken) {
  if (cursor.last_push == RelaxedCursor::kNoList) return;
  List& list = lists_[cursor.last_push];
  std::unique_lock<Spinlock> hold(list.lock);
  // The newest first: a child started and then joined at once is the last push.
  while (list.count != 0) {
    const std::size_t tail = (list.head + list.count - 1) & (list.capacity - 1);
    const std::uintptr_t value = list.items[tail].value;
    if (!wanted(value)) break;
    --list.count;
    // relaxed: see List::head_stamp.
    if (list.count == 0) list.head_stamp.store(kEmpty, std::memory_order_relaxed);
    list.size.store(list.count, std::memory_order_relaxed);
    hold.unlock();
    if (!taken(value)) return;
    hold.lock();
  }
  while (list.count != 0 && wanted(list.items[list.head].value)) {
    const std::uintptr_t value = PopLocked(list);
    hold.unlock();
    if (!taken(value)) return;
    hold.lock();
  }
}

bool RelaxedQueue::UnsafeEmpty() const {
  for (std::size_t i = 0; i < count_; ++i) {
    // relaxed: a snapshot (see the invariant at the top).
    if (lists_[i].head_stamp.load(std::memory_order_relaxed) != kEmpty) return false;
  }
  return true;
}

std::size_t RelaxedQueue::UnsafeSize() const {
  std::size_t size = 0;
  // relaxed: a snapshot.
  for (std::size_t i = 0; i < count_; ++i) size += lists_[i].size.load(std::memory_order_relaxed);
  return size;
}

}  // namespace spindle::internal
