// Copyright 2026 The Spindle Authors.
//
// Fiber-local storage: like thread_local, but one value per fiber, and the value follows
// the fiber when it migrates between workers.
//
//   spindle::FiberLocal<std::string> trace_id;   // a static or a long-lived member
//   ...
//   *trace_id = "req-42";                        // in a fiber: this fiber's value
//   Log(*trace_id);                              // still this fiber's after any park
//
// For state that should follow a request into the fibers it starts, see
// fiber/execution_context.h.

#ifndef SPINDLE_FIBER_FIBER_LOCAL_H_
#define SPINDLE_FIBER_FIBER_LOCAL_H_

#include <cstdint>

#include "fiber/internal/local_storage.h"

namespace spindle {

// One T per fiber. A fiber's value is constructed (value-initialized, T()) the first
// time that fiber reads it, and destroyed on that fiber when its function returns,
// before join() returns. On a plain thread (not a fiber) the value is per thread,
// destroyed at thread exit.
//
// A fiber that join() runs inline (fiber/fiber.h) has its own values, as if it ran on
// a stack of its own: it does not see the joiner's, and its values are destroyed before
// join() returns.
//
// Thread-safety: get() returns the calling fiber's value, which only that fiber should
// touch (pass the pointer to others only as you would a local variable's address).
// Constructing and destroying FiberLocal objects is thread-safe.
//
// Lifetime: destroying a FiberLocal leaves the values that live fibers hold; each is
// destroyed when its fiber ends. A FiberLocal costs every fiber that reads it a pointer
// slot (five are inline in the fiber's control block), so make them statics or members
// of long-lived objects, not per-request objects.
//
// Reading costs a call, three loads and a compare once the value exists (see
// fiber_local_benchmark.cc for the figure).
template <class T>
class FiberLocal {
 public:
  // Takes a key of the fiber-local key space (a destroyed FiberLocal's index may be
  // reused; values left under its key are never seen through the new one).
  // Thread-safe. Running out of keys (2^32 - 1) stops the process with a message.
  FiberLocal() : key_(internal::AllocateLocalKey(internal::LocalKeySpace::kFiber)) {}
  ~FiberLocal() { internal::FreeLocalKey(internal::LocalKeySpace::kFiber, key_); }
  FiberLocal(const FiberLocal&) = delete;
  FiberLocal& operator=(const FiberLocal&) = delete;

  // The calling fiber's value, constructed on first use. Valid until the fiber ends; do
  // not keep it across fibers.
  T* get() {
    internal::FiberLocalStorage& storage = internal::CurrentFiberLocalStorage();
    internal::LocalBox** slot = storage.Slot(key_.index);
    internal::LocalBox* box = *slot;
    if (__builtin_expect(box != nullptr && box->generation == key_.generation, 1)) {
      return &static_cast<internal::TypedLocalBox<T>*>(box)->value;
    }
    return Create(storage);
  }
  // get(), as a pointer and as a reference: the calling fiber's value.
  T* operator->() { return get(); }
  T& operator*() { return *get(); }

 private:
  // T's constructor may use other fiber-locals and so grow the table: the slot is
  // looked up again after it. (The storage is the fiber's, wherever it runs by then.)
  __attribute__((noinline)) T* Create(internal::FiberLocalStorage& storage) {
    auto* box = new internal::TypedLocalBox<T>(key_.generation);
    storage.Install(storage.Slot(key_.index), box);
    return &box->value;
  }

  const internal::LocalKey key_;
};

}  // namespace spindle

#endif  // SPINDLE_FIBER_FIBER_LOCAL_H_
