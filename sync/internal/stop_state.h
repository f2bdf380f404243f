// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_INTERNAL_STOP_STATE_H_
#define SPINDLE_SYNC_INTERNAL_STOP_STATE_H_

#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/atomic.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

// The shared state of a cancellation (sync/stop_token.h's StopSource and StopToken, an
// ExecutionContext's Cancel()): one flag that goes from "not requested" to "requested"
// once, and the callbacks to run when it does. The interruptible waits register one
// (TimedWaiter's cancel node) for as long as they are parked.
//
// Protocol (why every registered callback runs exactly once, or not at all, and never
// after its owner is gone):
//   1. RequestStop() sets the flag and takes the callbacks out one at a time, under
//      lock_; it releases lock_ while it runs each, then marks it done (its last access).
//   2. Add() links a callback under lock_ unless the flag is set: so a callback is
//      either linked before RequestStop() takes the lock (and is taken and run by it) or
//      Add() sees the flag and links nothing (the caller acts on the stop itself).
//   3. Remove() unlinks the callback under lock_ if it is still linked; otherwise a
//      RequestStop() took it, and Remove() waits until that run is done with it, unless
//      the caller is that run itself (a callback that destroys its own registration,
//      or the context or StopCallback that owns it, inside its run: a child context
//      dropped by a callback of its own cancellation): then Remove() returns at once
//      and the run does not touch the callback again. After Remove() returns, nothing
//      touches the callback.
// "The run itself" is the fiber (or plain thread) running it, so a callback that parks
// and resumes elsewhere is still itself, and another fiber on its worker is not. A
// fiber waiting in Remove() yields its worker while it waits (the run it waits for may
// be parked, waiting for that worker). Callbacks should be short: they delay the
// RequestStop() that runs them and the callbacks after them.
//
// Thread-safety: thread-safe. Ownership: reference-counted (Ref/Unref; Create() returns
// one reference); a callback's owner keeps a reference (or an owner that holds one)
// while the callback is registered.
class StopState {
 public:
  // A registration, owned by the registering code (a waiter, a StopCallback, a child
  // context's link to its parent). Each is Add()ed at most once. Only `run` is the
  // owner's to set (before Add()); Add() sets the rest (a waiter that never registers
  // pays nothing for them).
  struct Callback {
    void (*run)(Callback* self) noexcept;  // a throwing callback terminates
    Callback* next;  // under the state's lock_
    Callback* prev;  // under the state's lock_
    bool linked;     // under the state's lock_
    // Set by the RequestStop() that ran this callback, after run() returned: its last
    // access. Remove() waits for it when it finds the callback taken.
    Atomic<bool> done;
  };

  static StopState* Create() { return new StopState(); }
  StopState(const StopState&) = delete;
  StopState& operator=(const StopState&) = delete;

  void Ref() {
    // relaxed: a new reference is made from one already held, which keeps the state.
    refs_.fetch_add(1, std::memory_order_relaxed);
  }
  void Unref() {
    // acq_rel: the last owner sees every other owner's accesses before it deletes.
    if (refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) delete this;
  }

  bool stop_requested() const {
    // acquire: pairs with RequestStop()'s release store; what the requester wrote before
    // is visible to a caller that sees the stop.
    return requested_.load(std::memory_order_acquire);
  }

  // Requests the stop and runs every registered callback on the calling thread, one at
  // a time. True if this call made the request; false if it had been made before (then
  // nothing runs). Safe even if a callback drops the last other reference to the state.
  bool RequestStop();

  // Registers `callback`; false (and nothing registered) if the stop was requested
  // already: then the caller acts on it itself.
  bool Add(Callback* callback);

  // Unregisters `callback`, which Add() registered: afterwards its run() is not running
  // (unless the caller is that run) and will not run. May wait (yielding the fiber, or
  // the thread) for a run() in progress elsewhere.
  void Remove(Callback* callback);

 private:
  StopState() = default;
  ~StopState() = default;

  // Who runs a callback: the calling fiber (or plain thread).
  static const void* CurrentRunner();
  // Waits until `callback`'s run is done with it.
  static void WaitUntilDone(Callback* callback);

  Atomic<bool> requested_{false};
  Atomic<std::uint32_t> refs_{1};
  Spinlock lock_;
  Callback* head_ ABSL_GUARDED_BY(lock_) = nullptr;
  Callback* tail_ ABSL_GUARDED_BY(lock_) = nullptr;
  // The callback RequestStop() runs now, who runs it, and the flag on RequestStop()'s
  // stack that a Remove() by that runner sets (step 3).
  Callback* running_ ABSL_GUARDED_BY(lock_) = nullptr;
  const void* runner_ ABSL_GUARDED_BY(lock_) = nullptr;
  bool* running_removed_ ABSL_GUARDED_BY(lock_) = nullptr;
};

}  // namespace spindle::internal

#endif  // SPINDLE_SYNC_INTERNAL_STOP_STATE_H_
