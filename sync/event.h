// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_EVENT_H_
#define SPINDLE_SYNC_EVENT_H_

#include <atomic>
#include <chrono>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/spinlock.h"
#include "sync/internal/wait_queue.h"

namespace spindle {

// A one-shot event: once Set(), it stays set and every Wait() returns at once. Any mix
// of fibers and plain threads may wait and set. Thread-safe.
class Event {
 public:
  Event() = default;
  // May run as soon as Wait() has returned, even while the Set() that released the
  // waiter is still finishing: it waits for Set() to leave the event first.
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  // Sets the event and wakes every waiter. Later calls do nothing.
  void Set();
  // Whether the event is set; never waits. A caller that sees true also sees what the
  // setter wrote before Set().
  bool IsSet() const { return set_.load(std::memory_order_acquire); }  // acquire: Set()

  // Waits until the event is set (not interruptible: see WaitUntil()).
  void Wait() { Await(std::chrono::steady_clock::time_point::max(), nullptr); }
  // True if the event is set, false if `deadline` came first or the caller's execution
  // context was cancelled (interruptible: ExecutionContext::Cancel(); its deadline
  // applies too).
  bool WaitUntil(std::chrono::steady_clock::time_point deadline) {
    return Await(deadline, internal::CurrentWaitLimits());
  }
  // WaitUntil() with the deadline `timeout` from now (steady clock); interruptible as
  // it is.
  template <class Rep, class Period>
  bool WaitFor(std::chrono::duration<Rep, Period> timeout) {
    return WaitUntil(std::chrono::steady_clock::now() +
                     std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  }

 private:
  bool Await(std::chrono::steady_clock::time_point deadline,
             const internal::WaitLimits* limits);

  std::atomic<bool> set_{false};
  internal::Spinlock lock_;
  internal::WaitQueue waiters_ ABSL_GUARDED_BY(lock_);
};

}  // namespace spindle

#endif  // SPINDLE_SYNC_EVENT_H_
