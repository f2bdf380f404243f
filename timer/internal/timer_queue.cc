// Copyright 2026 The Spindle Authors.
//
// A worker's timers. Why a run beside the heap: a worker's timers mostly arrive in
// expiry order (100k fibers sleeping 1 ms, a socket deadline per request), and a heap
// pays for that order anyway: each pop moves its last item, the latest, from the root
// down to a leaf, writing the index of every node it passes (nodes on cold fiber
// stacks); the run adds at its tail and pops at its head, touching only the node
// concerned. Why a 4-ary heap for the rest: a sift reads the four children of a level
// from one cache line (4 x 16-byte items), so a pop from 100k timers touches about 9
// lines instead of the binary heap's 17. Why indexed: an RPC deadline is nearly always
// cancelled, and a node that lives on a fiber's stack must be out of the queue before
// the frame is gone, so Remove() takes it out at once (O(1) from the run, O(log4 n)
// from the heap).
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
    node->dropped.store(true, std::memory_order_relaxed);  // relaxed: see TimerNode
    return PushResult::kClosed;
  }
  node->dropped.store(false, std::memory_order_relaxed);  // relaxed: see TimerNode
  if (run_tail_ == nullptr || run_tail_ns_ <= node->expires_ns) {
    node->index = TimerNode::kInRun;  // in order: the run's new tail
    node->run_prev = run_tail_;
    node->run_next = nullptr;
    if (run_tail_ != nullptr) {
      run_tail_->run_next = node;
      run_tail_->run_next_expires_ns = node->expires_ns;
    } else {
      run_head_ = node;
      run_head_ns_ = node->expires_ns;
    }
    run_tail_ = node;
    run_tail_ns_ = node->expires_ns;
    ++run_count_;
  } else {
    heap_.push_back(Item{node->expires_ns, node});
    SiftUp(heap_.size() - 1, heap_.back());
  }
  // relaxed: under the lock; Remove()'s unlocked read only picks the lock to take.
  node->queue.store(this, std::memory_order_relaxed);
  PublishSizes();
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
  // relaxed (both loads of `dropped`): see TimerNode.
  if (queue == nullptr) {
    return node->dropped.load(std::memory_order_relaxed) ? RemoveResult::kDropped
                                                          : RemoveResult::kNotQueued;
  }
  SpinlockGuard lock(queue->lock_);
  // relaxed: under the lock that guards every write of it.
  if (node->queue.load(std::memory_order_relaxed) != queue) {
    return node->dropped.load(std::memory_order_relaxed) ? RemoveResult::kDropped
                                                          : RemoveResult::kNotQueued;
  }
  if (node->index == TimerNode::kInRun) {
    queue->Unlink(node);
  } else {
    queue->RemoveAt(node->index);
  }
  node->queue.store(nullptr, std::memory_order_relaxed);
  queue->PublishSizes();
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
  while (n < max) {
    if (run_head_ == nullptr && heap_.empty()) break;
    bool in_run = false;
    if (EarliestNs(&in_run) > now_ns) break;
    TimerNode* node;
    if (in_run) {
      node = run_head_;
      Unlink(node);
    } else {
      node = heap_.front().node;
      RemoveAt(0);
    }
    // release: pairs with the acquire load in Remove() (which then reads `dropped`).
    node->queue.store(nullptr, std::memory_order_release);
    out[n++] = node;
  }
  // relaxed: under the lock, which DropAll() takes before it waits for the count.
  if (n != 0) firing_.fetch_add(1, std::memory_order_relaxed);
  // A burst of timers (a million sockets' deadlines) gives its memory back once gone.
  if (heap_.capacity() > 4 * heap_.size() + 4096) heap_.shrink_to_fit();
  PublishSizes();
  PublishFront();
  return n;
}

void TimerQueue::DropAll(std::vector<TimerNode*>* out) {
  {
    SpinlockGuard lock(lock_);
    closed_ = true;
    for (const Item& item : heap_) out->push_back(item.node);
    heap_.clear();
    for (TimerNode* node = run_head_; node != nullptr; node = node->run_next) {
      out->push_back(node);
    }
    run_head_ = run_tail_ = nullptr;
    run_count_ = 0;
    for (TimerNode* node : *out) {
      node->dropped.store(true, std::memory_order_relaxed);  // relaxed: see TimerNode
      node->queue.store(nullptr, std::memory_order_release);  // release: as in PopDue
    }
    PublishSizes();
    PublishFront();
  }
  // Nothing is popped after the close; what was popped before is fired by its popper.
  // acquire: pairs with DoneFiring().
  while (firing_.load(std::memory_order_acquire) != 0) std::this_thread::yield();
}

void TimerQueue::PublishFront() {
  // relaxed: see front_ns(). Raising it is safe only here, where it is exact.
  bool in_run = false;
  front_ns_.store(EarliestNs(&in_run), std::memory_order_relaxed);
}

void TimerQueue::PublishSizes() {
  // relaxed: statistics.
  size_.store(heap_.size() + run_count_, std::memory_order_relaxed);
  run_size_.store(run_count_, std::memory_order_relaxed);
}

std::int64_t TimerQueue::EarliestNs(bool* in_run) const {
  const std::int64_t heap_ns = heap_.empty() ? INT64_MAX : heap_.front().expires_ns;
  *in_run = run_head_ != nullptr && run_head_ns_ <= heap_ns;
  return *in_run ? run_head_ns_ : heap_ns;
}

void TimerQueue::Unlink(TimerNode* node) {
  TimerNode* const next = node->run_next;
  const bool head = node == run_head_;
  TimerNode* const prev = head ? nullptr : node->run_prev;  // a head's is stale
  if (head) {
    // Only the queue's own fields: the next node (cold, on another fiber's stack) is
    // not written; its stale run_prev is never read while it is the head.
    run_head_ = next;
    run_head_ns_ = node->run_next_expires_ns;
    // The next pop reads it (its links), and it has slept on its fiber's stack as long
    // as this one: fetch it now, so that the miss overlaps with firing this one.
    if (next != nullptr) __builtin_prefetch(next);
  } else {
    prev->run_next = next;
    prev->run_next_expires_ns = node->run_next_expires_ns;
  }
  if (next == nullptr) {
    run_tail_ = prev;
    if (prev != nullptr) run_tail_ns_ = prev->expires_ns;
  } else if (!head) {
    next->run_prev = prev;
  }
  node->run_prev = node->run_next = nullptr;
  --run_count_;
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
