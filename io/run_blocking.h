// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_RUN_BLOCKING_H_
#define SPINDLE_IO_RUN_BLOCKING_H_

#include <optional>
#include <type_traits>
#include <utility>

#include "absl/functional/function_ref.h"

namespace spindle::io {

namespace internal {
// Runs `call` on the blocking pool and waits (parking a fiber, blocking a thread).
void RunOnBlockingPool(absl::FunctionRef<void()> call);
}  // namespace internal

// Runs `f()` (a blocking call: getaddrinfo, file IO, a blocking library) on a bounded
// side pool of plain threads (--io_blocking_threads) and parks the calling fiber until
// it returns, so the fiber's worker runs other fibers meanwhile; returns what f
// returned. From a plain thread it works too (the thread blocks). When every pool
// thread is busy, calls queue in order. An exception thrown by f is rethrown here.
// Do not call RunBlocking() from inside f (the pool could wait on itself).
template <typename F>
std::invoke_result_t<F&> RunBlocking(F&& f) {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_void_v<R>) {
    internal::RunOnBlockingPool([&f] { f(); });
  } else {
    std::optional<R> result;
    internal::RunOnBlockingPool([&f, &result] { result.emplace(f()); });
    return std::move(*result);
  }
}

}  // namespace spindle::io

#endif  // SPINDLE_IO_RUN_BLOCKING_H_
