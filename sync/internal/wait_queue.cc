// Copyright 2026 The Spindle Authors.

#include "sync/internal/wait_queue.h"

#include "glog/logging.h"
#include "sync/internal/timed_waiter.h"

namespace spindle::internal {

struct WaitQueue::Node {
  TimedWaiter waiter;
  Node* next = nullptr;
  Node* prev = nullptr;
  std::uintptr_t tag = 0;  // written by the waker under the lock, before Notify()
  bool linked = false;
};

WaitQueue::~WaitQueue() {
  CHECK(head_ == nullptr) << "a synchronization primitive was destroyed while fibers or "
                             "threads were waiting on it";
}

TimedWaiter::Result WaitQueue::Wait(std::unique_lock<Spinlock>& lock,
                                    MonotonicDeadline deadline, WaitKind kind,
                                    const WaitLimits* limits, const void* object) {
  WaitDetail detail;
  return Wait(lock, deadline, detail, kind, limits, object);
}

TimedWaiter::Result WaitQueue::Wait(std::unique_lock<Spinlock>& lock,
                                    MonotonicDeadline deadline, WaitDetail& detail,
                                    WaitKind kind, const WaitLimits* limits,
                                    const void* object) {
  Node node;
  Link(&node, detail.front);
  lock.unlock();
  const TimedWaiter::Result result = node.waiter.WaitUntil(deadline, kind, limits, object);
  lock.lock();
  detail.removed_self = node.linked;
  if (node.linked) Unlink(&node);  // timed out or cancelled before anybody chose it
  detail.tag = node.tag;           // the waker wrote it under the lock we now hold
  return result;
}

bool WaitQueue::WakeOne(std::uintptr_t tag, std::size_t* popped) {
  std::size_t removed = 0;
  bool woke = false;
  while (Node* node = PopFront()) {
    ++removed;
    node->tag = tag;
    if (node->waiter.Notify()) {
      woke = true;
      break;
    }
    // That waiter's deadline (or cancellation) won; it unlinks nothing (we did) and
    // leaves. Next.
  }
  if (popped != nullptr) *popped = removed;
  return woke;
}

std::size_t WaitQueue::WakeAll() {
  std::size_t woken = 0;
  while (Node* node = PopFront()) woken += node->waiter.Notify() ? 1 : 0;
  return woken;
}

void WaitQueue::Link(Node* node, bool front) {
  if (front) {
    node->prev = nullptr;
    node->next = head_;
    (head_ != nullptr ? head_->prev : tail_) = node;
    head_ = node;
  } else {
    node->prev = tail_;
    node->next = nullptr;
    (tail_ != nullptr ? tail_->next : head_) = node;
    tail_ = node;
  }
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
