// Copyright 2026 The Spindle Authors.
//
// Async(): a function run in a new fiber, its result delivered through a Future
// (sync/future.h). Here, in the fiber layer, because it starts a fiber: the futures
// themselves (Promise, Future, Then, WhenAll, BlockingGet) live in //sync and include
// nothing above it.

#ifndef SPINDLE_FIBER_ASYNC_H_
#define SPINDLE_FIBER_ASYNC_H_

#include <exception>
#include <type_traits>
#include <utility>

#include "fiber/fiber.h"
#include "sync/future.h"

namespace spindle {

// Runs `f` in a new fiber (of `attributes`' scheduling group) and returns the future
// of its result; an exception thrown by `f` goes into the future. Needs a running
// runtime. Callable from fibers and plain threads.
template <class F, class R = std::invoke_result_t<std::decay_t<F>&>>
Future<R> Async(const Fiber::Attributes& attributes, F&& f) {
  Promise<R> promise;
  Future<R> future = promise.GetFuture();
  StartFiberDetached(attributes, [promise = std::move(promise),
                                  f = std::forward<F>(f)]() mutable {
    // The exception is handed over after its catch block has ended: the block's end
    // (__cxa_end_catch) then never drops the exception's last reference while a getter
    // may still read it. (That drop, inside uninstrumented libstdc++, was ordered after
    // the getter's read only by libstdc++'s own reference count, which ThreadSanitizer
    // cannot see.)
    std::exception_ptr error;
    try {
      if constexpr (std::is_void_v<R>) {
        f();
        promise.SetValue();
      } else {
        promise.SetValue(f());
      }
    } catch (...) {
      error = std::current_exception();
    }
    if (error) promise.SetException(std::move(error));
  });
  return future;
}
template <class F, class R = std::invoke_result_t<std::decay_t<F>&>>
Future<R> Async(F&& f) {
  return Async(Fiber::Attributes(), std::forward<F>(f));
}

}  // namespace spindle

#endif  // SPINDLE_FIBER_ASYNC_H_
