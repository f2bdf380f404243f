// Copyright 2026 The Spindle Authors.
//
// A worker's timer heap. Why a 4-ary heap: a sift reads the four children of a level
// from one cache line (4 x 16-byte items), so a pop from 100k timers touches about 9
// lines instead of the binary heap's 17; and why indexed: an RPC deadline is nearly
// always cancelled, and a node that lives on a fiber's stack must be out of the heap
// before the frame is gone, so Remove() takes it out at once (O(log4 n); the usual
// cancel is of the timer armed last, at the end of the heap, where it is O(1)).
//
// Every write of a node's `queue` and `index` is under the lock of the queue that holds
// it. Remove() reads `queue` without the lock to find that lock, then re-reads it under
// the lock: a node popped meanwhile (queue null, or, for a periodic TimerEntry, already
// in another queue) is not removed from a queue that no longer holds it.

#include "timer/internal/timer_queue.h"

#include <thread>

namespace spindle::internal {

TimerQueue::PushResult TimerQueue::Push(TimerNode* node) {
  SpinlockGuard lock(lock_);
  if (closed_) {
    node->dropped = true;
    return PushResult::kClosed;
  }
  node->dropped = false;
  heap_.push_back(Item{node->expires_ns, node});
  SiftUp(heap_.size() - 1, heap_.back());
  // relaxed: under the lock; Remove()'s unlocked read only picks the lock to take.
  node->queue.store(this, std::memory_order_relaxed);
  size_.store(heap_.size(), std::memory_order_relaxed);  // relaxed: a statistic
  // relaxed: ordered for the group's TimerWorker by the caller's fence (timer_worker.cc).
  if (node->expires_ns < front_ns_.load(std::memory_order_relaxed)) {
    front_ns_.store(node->expires_ns, std::memory_order_relaxed);
    return PushResult::kAddedEarliest;
  }
  return PushResult::kAdded;
}

TimerQueue::RemoveResult TimerQueue::Remove(TimerNode* node) {
  // acquire: pairs with the release stores of null in PopDue() and DropAll(), so a
  // null seen here comes with the `dropped` written before it.
  TimerQueue* queue = node->queue.load(std::memory_order_acquire);
  if (queue == nullptr) return node->dropped ? RemoveResult::kDropped : RemoveResult::kNotQueued;
  SpinlockGuard lock(queue->lock_);
  // relaxed: under the lock that guards every write of it.
  if (node->queue.load(std::memory_order_relaxed) != queue) {
    return node->dropped ? RemoveResult::kDropped : RemoveResult::kNotQueued;
  }
  queue->RemoveAt(node->index);
  node->queue.store(nullptr, std::memory_order_relaxed);
  queue->size_.store(queue->heap_.size(), std::memory_order_relaxed);  // a statistic
  return RemoveResult::kRemoved;
}

std::size_t TimerQueue::PopDue(std::int64_t now_ns, TimerNode** out, std::size_t max,
                              bool only_if_free) {
  if (only_if_free) {
    if (!lock_.try_lock()) return 0;
  } else {
    lock_.lock();
  }
  SpinlockGuard lock(lock_, std::adopt_lock);
  std::size_t n = 0;
  while (n < max && !heap_.empty() && heap_.front().expires_ns <= now_ns) {
    TimerNode* node = heap_.front().node;
    RemoveAt(0);
    // release: pairs with the acquire load in Remove() (which then reads `dropped`).
    node->queue.store(nullptr, std::memory_order_release);
    out[n++] = node;
  }
  // relaxed: under the lock, which DropAll() takes before it waits for the count.
  if (n != 0) firing_.fetch_add(1, std::memory_order_relaxed);
  // A burst of timers (a million sockets' deadlines) gives its memory back once gone.
  if (heap_.capacity() > 4 * heap_.size() + 4096) heap_.shrink_to_fit();
  size_.store(heap_.size(), std::memory_order_relaxed);  // relaxed: a statistic
  PublishFront();
  return n;
}

void TimerQueue::DropAll(std::vector<TimerNode*>* out) {
  {
    SpinlockGuard lock(lock_);
    closed_ = true;
    for (const Item& item : heap_) {
      item.node->dropped = true;
      item.node->queue.store(nullptr, std::memory_order_release);  // release: as in PopDue
      out->push_back(item.node);
    }
    heap_.clear();
    size_.store(0, std::memory_order_relaxed);  // relaxed: a statistic
    PublishFront();
  }
  // Nothing is popped after the close; what was popped before is fired by its popper.
  // acquire: pairs with DoneFiring().
  while (firing_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void TimerQueue::PublishFront() {
  // relaxed: see front_ns(). Raising it is safe only here, where the heap is exact.
  front_ns_.store(heap_.empty() ? INT64_MAX : heap_.front().expires_ns,
                  std::memory_order_relaxed);
}

void TimerQueue::SiftUp(std::size_t i, Item item) {
  while (i > 0) {
    const std::size_t parent = (i - 1) / 4;
    if (heap_[parent].expires_ns <= item.expires_ns) break;
    Place(i, heap_[parent]);
    i = parent;
  }
  Place(i, item);
}

void TimerQueue::SiftDown(std::size_t i, Item item) {
  const std::size_t n = heap_.size();
  for (;;) {
    const std::size_t first = 4 * i + 1;
    if (first >= n) break;
    const std::size_t end = first + 4 < n ? first + 4 : n;
    std::size_t best = first;
    for (std::size_t c = first + 1; c < end; ++c) {
      if (heap_[c].expires_ns < heap_[best].expires_ns) best = c;
    }
    if (heap_[best].expires_ns >= item.expires_ns) break;
    Place(i, heap_[best]);
    i = best;
  }
  Place(i, item);
}

void TimerQueue::RemoveAt(std::size_t i) {
  const Item last = heap_.back();
  heap_.pop_back();
  if (i == heap_.size()) return;  // it was the last item
  if (i > 0 && last.expires_ns < heap_[(i - 1) / 4].expires_ns) {
    SiftUp(i, last);
  } else {
    SiftDown(i, last);
  }
}

}  // namespace spindle::internal
