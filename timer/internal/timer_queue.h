// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_TIMER_INTERNAL_TIMER_QUEUE_H_
#define SPINDLE_TIMER_INTERNAL_TIMER_QUEUE_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/atomic.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

class TimerQueue;

// A timer that lives inside the object that uses it (a sleeping fiber's waiter, a
// deadline wait, a TimerEntry): arming it allocates nothing. Owned by that object; a
// TimerQueue holds a pointer to it from Push() until it is popped (expired) or
// removed, and the owner must not free or re-arm it before one of those.
struct TimerNode {
  // When it expires, in ns of CLOCK_MONOTONIC (steady_clock). Set before Push().
  std::int64_t expires_ns = 0;
  // Called once the node has left its queue because it expired, on the thread that
  // popped it, holding no lock. It may free the node's owner (after its last access).
  void (*fire)(TimerNode* node) = nullptr;
  // A hint for a firing round: memory the call will touch (a parked fiber's control
  // block), prefetched a few timers ahead. May be null.
  const void* touches = nullptr;
  // The queue holding the node; null when none. Written under that queue's lock;
  // Remove() reads it first without the lock, to know which lock to take.
  Atomic<TimerQueue*> queue{nullptr};
  // Its place in the queue's heap, or kInRun when it is in the queue's run; guarded by
  // the lock of `queue`, as are the run's links.
  static constexpr std::uint32_t kInRun = UINT32_MAX;
  std::uint32_t index = 0;
  // The run's links. The head's run_prev is left stale (a pop does not write the next
  // node, which is cold); the queue knows its head. run_next_expires_ns is the expiry
  // of run_next, so that a pop learns the new head's expiry without reading it.
  TimerNode* run_prev = nullptr;
  TimerNode* run_next = nullptr;
  std::int64_t run_next_expires_ns = 0;
  // Set (under the lock) when TimerQueue::DropAll() took the node out at shutdown
  // without firing it: Remove() then reports it as never going to fire. Atomic: a
  // periodic TimerEntry is pushed again (writing it) while KillTimer()'s Remove() may
  // read it without the lock. relaxed: ordered by `queue`'s release and acquire.
  Atomic<bool> dropped{false};
};

// One worker's timers, in two orders: the run, a list of nodes linked through
// themselves in expiry order, which takes every timer that expires no earlier than the
// run's last (most of them: a call site arms one duration, so a worker's deadlines
// arrive in order), in O(1) to add, remove or pop; and a 4-ary min-heap of (expiry,
// node) pairs for the others, the expiry beside the pointer so that ordering reads no
// node. Each node records its place (its heap index, or kInRun), so Remove() takes a
// cancelled timer out at once and its memory is reusable when Remove() returns.
//
// Thread-safety: every member from any thread. The owner (the worker that arms into
// it) finds the lock free but for the moments another thread fires or removes one of
// its timers; `front_ns()` is a lock-free read.
class alignas(64) TimerQueue {  // a line of its own: workers' queues sit side by side
 public:
  // With room for 64 timers out of expiry order (the heap's), so that a worker's first
  // ones allocate nothing.
  TimerQueue() { heap_.reserve(64); }
  TimerQueue(const TimerQueue&) = delete;
  TimerQueue& operator=(const TimerQueue&) = delete;

  enum class PushResult {
    kAdded,
    // Added, and it lowered front_ns(): the caller tells whoever sleeps until the old
    // front (the group's TimerWorker, timer_worker.cc).
    kAddedEarliest,
    // The queue is closed (DropAll() ran at shutdown): the node is dropped at once.
    kClosed,
  };
  // Adds `node` (in no queue; `expires_ns` and `fire` set).
  PushResult Push(TimerNode* node);

  enum class RemoveResult {
    kRemoved,    // taken out here: it will never fire
    kDropped,    // taken out at shutdown (DropAll): it will never fire
    kNotQueued,  // popped to fire (its call may still be running), or never pushed
  };
  // Takes `node` out of the queue holding it, if any.
  static RemoveResult Remove(TimerNode* node);

  // Pops up to `max` nodes due at `now_ns`, earliest first, into `out` (each leaves the
  // queue: queue null), and republishes front_ns() as the earliest expiry left. The
  // caller fires them, holding no lock, then calls DoneFiring() if it popped any.
  // Returns how many. With `only_if_free`, pops nothing (returns 0) if another thread
  // holds the queue's lock.
  std::size_t PopDue(std::int64_t now_ns, TimerNode** out, std::size_t max,
                     bool only_if_free = false);

  // The caller of a PopDue() that popped nodes has fired them all.
  void DoneFiring() {
    // release: pairs with the acquire load in DropAll(), which then sees the calls done.
    firing_.fetch_sub(1, std::memory_order_release);
  }

  // Closes the queue (later pushes are refused), takes every node out without firing
  // it (dropped: see TimerNode), into `out`, and waits until the nodes popped before
  // are fired (DoneFiring): after it returns, no call of this queue's starts.
  void DropAll(std::vector<TimerNode*>* out);

  // A lower bound of the earliest expiry held (INT64_MAX: none): Push() lowers it at
  // once; Remove() leaves it (a cancelled front makes one early look, no late one);
  // PopDue() raises it to the exact front. relaxed: callers that need more order it
  // with a fence (timer_worker.cc).
  std::int64_t front_ns() const { return front_ns_.load(std::memory_order_relaxed); }

  // When the owning worker, asleep, wakes by itself to fire this queue (INT64_MAX: it
  // does not): a hint for the timer thread, which is then only the fallback for the
  // fronts up to it. relaxed: a heuristic; the owner wakes on time either way, and a
  // stale value makes the thread wake too early or kAssistGraceNs late, never never.
  std::int64_t owner_sleeps_until() const {
    return owner_sleeps_until_.load(std::memory_order_relaxed);
  }
  void set_owner_sleeps_until(std::int64_t ns) {
    owner_sleeps_until_.store(ns, std::memory_order_relaxed);
  }

  // Timers held (a snapshot).
  std::size_t size() const { return size_.load(std::memory_order_relaxed); }
  // Of those, in the run (a snapshot, for tests).
  std::size_t run_size() const { return run_size_.load(std::memory_order_relaxed); }

 private:
  struct Item {
    std::int64_t expires_ns;
    TimerNode* node;
  };
  void Place(std::size_t i, const Item& item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    heap_[i] = item;
    item.node->index = static_cast<std::uint32_t>(i);
  }
  void SiftUp(std::size_t i, Item item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void SiftDown(std::size_t i, Item item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void RemoveAt(std::size_t i) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void Unlink(TimerNode* node) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  // The earliest expiry held (INT64_MAX: none), and whether it is the run's head (else
  // the heap's top). Reads no node.
  std::int64_t EarliestNs(bool* in_run) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void PublishSizes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void PublishFront() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);

  Spinlock lock_;
  std::vector<Item> heap_ ABSL_GUARDED_BY(lock_);
  TimerNode* run_head_ ABSL_GUARDED_BY(lock_) = nullptr;
  TimerNode* run_tail_ ABSL_GUARDED_BY(lock_) = nullptr;
  // The expiries of the run's head and tail (valid while the run is not empty).
  std::int64_t run_head_ns_ ABSL_GUARDED_BY(lock_) = 0;
  std::int64_t run_tail_ns_ ABSL_GUARDED_BY(lock_) = 0;
  std::size_t run_count_ ABSL_GUARDED_BY(lock_) = 0;
  bool closed_ ABSL_GUARDED_BY(lock_) = false;
  // Written under lock_; read without it by front_ns() and size().
  Atomic<std::int64_t> front_ns_{INT64_MAX};
  Atomic<std::size_t> size_{0};
  Atomic<std::size_t> run_size_{0};
  Atomic<std::int64_t> owner_sleeps_until_{INT64_MAX};
  // PopDue() calls whose nodes are being fired.
  Atomic<int> firing_{0};
};

}  // namespace spindle::internal

#endif  // SPINDLE_TIMER_INTERNAL_TIMER_QUEUE_H_
