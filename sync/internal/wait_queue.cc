// Copyright 2026 The Spindle Authors.

#include "sync/internal/wait_queue.h"

#include "glog/logging.h"

namespace spindle::internal {

WaitQueue::~WaitQueue() {
  CHECK(head_ == nullptr) << "a synchronization primitive was destroyed while fibers or "
                             "threads were waiting on it";
}

TimedWaiter::Result WaitQueue::Wait(std::unique_lock<Spinlock>& lock,
                                    TimerClock::time_point deadline) {
  Node node;
  Link(&node);
  lock.unlock();
  const TimedWaiter::Result result = node.waiter.WaitUntil(deadline);
  lock.lock();
  if (node.linked) Unlink(&node);  // timed out before anybody chose it
  return result;
}

bool WaitQueue::WakeOne() {
  while (Node* node = PopFront()) {
    if (node->waiter.Notify()) return true;
    // That waiter's deadline won; it unlinks nothing (we did) and leaves. Next.
  }
  return false;
}

std::size_t WaitQueue::WakeAll() {
  std::size_t woken = 0;
  while (Node* node = PopFront()) woken += node->waiter.Notify() ? 1 : 0;
  return woken;
}

void WaitQueue::Link(Node* node) {
  node->prev = tail_;
  node->next = nullptr;
  if (tail_ != nullptr) {
    tail_->next = node;
  } else {
    head_ = node;
  }
  tail_ = node;
  node->linked = true;
}

void WaitQueue::Unlink(Node* node) {
  (node->prev != nullptr ? node->prev->next : head_) = node->next;
  (node->next != nullptr ? node->next->prev : tail_) = node->prev;
  node->linked = false;
}

WaitQueue::Node* WaitQueue::PopFront() {
  Node* node = head_;
  if (node != nullptr) Unlink(node);
  return node;
}

}  // namespace spindle::internal
