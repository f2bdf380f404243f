// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_RUN_BLOCKING_H_
#define SPINDLE_IO_RUN_BLOCKING_H_

#include <cstdint>
#include <optional>
#include <type_traits>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/deadline.h"

namespace spindle::io {

namespace internal {
// Runs `call` on the blocking pool and waits for it (parking a fiber, blocking a
// thread). OK once it ran; DeadlineExceeded if no pool thread took it before
// `deadline` (then it never runs), Cancelled if the caller's execution context was
// cancelled before; ResourceExhausted if --io_blocking_queue_limit
// calls already wait for a thread, or no pool thread exists and none can be started.
absl::Status RunOnBlockingPool(absl::FunctionRef<void()> call, Deadline deadline);
// RunOnBlockingPool() with no deadline; a refusal is thrown as std::system_error.
void RunOnBlockingPoolOrThrow(absl::FunctionRef<void()> call);

template <typename R>
struct BlockingResult {
  static_assert(!std::is_reference_v<R>,
                "RunBlocking() with a deadline returns absl::StatusOr<R>: R may not be a "
                "reference");
  using type = absl::StatusOr<R>;
};
template <>
struct BlockingResult<void> {
  using type = absl::Status;
};
}  // namespace internal

// Runs `f()` (a blocking call: getaddrinfo, file IO, a blocking library) on a bounded
// side pool of plain threads (--io_blocking_threads, started on demand) and parks the
// calling fiber until it returns, so the fiber's worker runs other fibers meanwhile;
// from a plain thread it works too (the thread blocks). Calls that find every pool
// thread busy wait in order, at most --io_blocking_queue_limit of them; an exception
// thrown by f is rethrown to the caller. Do not call RunBlocking() from inside f (the
// pool could wait on itself).
//
// With a deadline: returns f's result (absl::Status for a void f), DeadlineExceeded if
// no pool thread took the call before `deadline` (f never runs), or ResourceExhausted
// at once if the queue is full (naming the flag). Its wait for a pool thread is
// interruptible (fiber/execution_context.h): Cancelled if the caller's execution
// context is cancelled first, DeadlineExceeded at its deadline if earlier (f never
// runs). A call that has started runs to its end and the caller waits for it,
// deadline or cancellation or not: f may use the caller's stack, and a blocking system
// call cannot be taken back.
//
// Without a deadline: returns what f returned; a full queue (or no pool thread at all)
// throws std::system_error (resource_unavailable_try_again) with that message. Not
// interruptible.
//
// A fiber parked here shows as "waiting on run_blocking" in the fiber dump, and
// TerminateRuntime() names the pool's running calls and their age when it logs the
// fibers it still waits for.
template <typename F>
std::invoke_result_t<F&> RunBlocking(F&& f) {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_void_v<R>) {
    internal::RunOnBlockingPoolOrThrow([&f] { f(); });
  } else {
    std::optional<R> result;
    internal::RunOnBlockingPoolOrThrow([&f, &result] { result.emplace(f()); });
    return std::move(*result);
  }
}
template <typename F>
typename internal::BlockingResult<std::invoke_result_t<F&>>::type RunBlocking(
    F&& f, Deadline deadline) {
  using R = std::invoke_result_t<F&>;
  if constexpr (std::is_void_v<R>) {
    return internal::RunOnBlockingPool([&f] { f(); }, deadline);
  } else {
    std::optional<R> result;
    absl::Status status =
        internal::RunOnBlockingPool([&f, &result] { result.emplace(f()); }, deadline);
    if (!status.ok()) return status;
    return std::move(*result);
  }
}

// The pool now (a snapshot, for metrics and tests).
struct BlockingPoolStats {
  std::uint64_t threads = 0;   // started (never stopped)
  std::uint64_t running = 0;   // calls running
  std::uint64_t queued = 0;    // calls waiting for a thread
  std::uint64_t refused = 0;   // calls refused for a full queue, since the start
  std::uint64_t timed_out = 0;  // calls whose deadline passed in the queue, since the start
  std::uint64_t cancelled = 0;  // calls whose context was cancelled in the queue
};
// The pool's counts now, all taken at one instant (under the pool's lock). Callable from
// any fiber or thread; it never fails.
BlockingPoolStats GetBlockingPoolStats();

}  // namespace spindle::io

#endif  // SPINDLE_IO_RUN_BLOCKING_H_
