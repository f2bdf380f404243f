// Copyright 2026 The Spindle Authors.
//
// Cancellation, shaped like C++20's std::stop_source / std::stop_token /
// std::stop_callback (which C++17 lacks):
//
//   spindle::StopSource source;
//   spindle::StopToken token = source.token();          // copies share one state
//   spindle::StopCallback on_stop(token, [&] { conn.Shutdown(); });
//   ...
//   source.RequestStop();   // runs on_stop's function, on this thread, once
//
// A request's cancellation usually travels in its execution context instead
// (fiber/execution_context.h: ExecutionContext::Cancel()), which every interruptible
// wait of the fibers and threads running in it honours.

#ifndef SPINDLE_SYNC_STOP_TOKEN_H_
#define SPINDLE_SYNC_STOP_TOKEN_H_

#include <cstddef>
#include <type_traits>
#include <utility>

namespace spindle {
namespace internal {

class StopState;  // sync/internal/stop_state.h

// What the classes below do to their StopState, out of line (stop_token.cc), so that
// this header (and sync/future.h, which includes it) brings none of the engine's.
StopState* StopStateCreate();                   // one reference, the caller's
void StopStateRef(StopState* state);            // relaxed: a new holder
void StopStateUnref(StopState* state);          // the last one deletes the state
bool StopStateRequested(const StopState* state);
bool StopStateRequest(StopState* state);

// Room inside a StopCallback for the node it registers (a StopState::Callback, its
// function and its owner); stop_token.cc checks that the node fits.
struct alignas(alignof(void*)) StopCallbackRoom {
  unsigned char bytes[8 * sizeof(void*)];
};
// Registers `run(owner)` on `state` in `room`; false (nothing registered) if the stop
// was requested already.
bool StopCallbackAdd(StopState* state, StopCallbackRoom& room,
                     void (*run)(void* owner) noexcept, void* owner);
// Unregisters it; if it runs on another thread now, returns once it has returned.
void StopCallbackRemove(StopState* state, StopCallbackRoom& room);

}  // namespace internal

// A view of a cancellation: tells whether its stop was requested. Cheap to copy (a
// reference count). A default-constructed token has no source: it is never stopped.
// Thread-safe: copies may be used from any threads.
class StopToken {
 public:
  StopToken() = default;
  // Copies share the state (one reference more); a moved-from token has no source
  // (stop_possible() false). They never fail. Each StopToken object is used by one
  // thread at a time; copies of it may be used concurrently.
  StopToken(const StopToken& other) : state_(other.state_) {
    if (state_ != nullptr) internal::StopStateRef(state_);
  }
  StopToken(StopToken&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  StopToken& operator=(StopToken other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  ~StopToken() {
    if (state_ != nullptr) internal::StopStateUnref(state_);
  }

  // True once the stop was requested (and for ever after).
  bool stop_requested() const {
    return state_ != nullptr && internal::StopStateRequested(state_);
  }
  // False for a token with no source.
  bool stop_possible() const { return state_ != nullptr; }

 private:
  friend class StopSource;
  friend class ExecutionContext;
  template <class F>
  friend class StopCallback;

  explicit StopToken(internal::StopState* state) : state_(state) {
    if (state_ != nullptr) internal::StopStateRef(state_);
  }

  internal::StopState* state_ = nullptr;
};

// Owns the right to request a stop. Copies share one state (any of them may request it).
// Thread-safe.
class StopSource {
 public:
  // A source with a new state of its own, not stopped. Allocates the state
  // (std::bad_alloc propagates).
  StopSource() : state_(internal::StopStateCreate()) {}
  // Copies share the state (one reference more). There is no move constructor: a move
  // copies, so that no source is ever left without a state.
  StopSource(const StopSource& other) : state_(other.state_) {
    internal::StopStateRef(state_);
  }
  // Makes this source share `other`'s state, dropping its reference to its own.
  StopSource& operator=(StopSource other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  ~StopSource() {
    if (state_ != nullptr) internal::StopStateUnref(state_);
  }

  // A token of this source's state: stop_possible(), and stopped once any source
  // sharing the state requests the stop. Thread-safe.
  StopToken token() const { return StopToken(state_); }
  // Requests the stop: runs every StopCallback registered on it, on this thread, and
  // wakes every interruptible wait under it. True if this call made the request; false
  // if it had been made before.
  bool RequestStop() { return internal::StopStateRequest(state_); }
  // True once the stop was requested, through any source sharing the state (and for
  // ever after). Thread-safe; never waits.
  bool stop_requested() const { return internal::StopStateRequested(state_); }

 private:
  friend class ExecutionContext;
  internal::StopState* state_;  // never null (a moved-from source is not offered)
};

// Runs `f()` once when the token's stop is requested: on the requesting thread, or at
// once in the constructor if it was requested already. The destructor unregisters it;
// if `f` is running on another thread then, the destructor waits for it to return, so
// `f` may use what the callback's owner destroys after it. `f` must not destroy its own
// StopCallback, and should be short (it delays the RequestStop() that runs it and the
// other callbacks after it). Not copyable or movable.
template <class F>
class StopCallback {
 public:
  // Registers `f` on `token`'s state. If the stop was requested already, calls `f` at
  // once, here, on this thread: an exception from it then propagates out of the
  // constructor (one from a call by RequestStop() terminates). With a token that has no
  // source, nothing is registered and `f` never runs. A RequestStop() racing with the
  // constructor runs `f` once, there or here.
  template <class G>
  StopCallback(const StopToken& token, G&& f) : f_(std::forward<G>(f)) {
    if (token.state_ != nullptr) {
      if (internal::StopCallbackAdd(token.state_, room_, &Run, this)) {
        state_ = token.state_;
        internal::StopStateRef(state_);
      } else {
        f_();  // requested already
      }
    }
  }
  ~StopCallback() {
    if (state_ != nullptr) {
      internal::StopCallbackRemove(state_, room_);
      internal::StopStateUnref(state_);
    }
  }
  StopCallback(const StopCallback&) = delete;
  StopCallback& operator=(const StopCallback&) = delete;

 private:
  // noexcept: an exception from `f` terminates (as std::stop_callback's).
  static void Run(void* owner) noexcept { static_cast<StopCallback*>(owner)->f_(); }

  F f_;
  internal::StopCallbackRoom room_;
  internal::StopState* state_ = nullptr;  // registered on it (holds a reference)
};

// Deduces StopCallback<F> from the function, by value:
// `spindle::StopCallback on_stop(token, [&] { ... });`.
template <class F>
StopCallback(const StopToken&, F) -> StopCallback<F>;

}  // namespace spindle

#endif  // SPINDLE_SYNC_STOP_TOKEN_H_
