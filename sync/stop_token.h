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

#include <type_traits>
#include <utility>

#include "sync/internal/stop_state.h"

namespace spindle {

// A view of a cancellation: tells whether its stop was requested. Cheap to copy (a
// reference count). A default-constructed token has no source: it is never stopped.
// Thread-safe: copies may be used from any threads.
class StopToken {
 public:
  StopToken() = default;
  StopToken(const StopToken& other) : state_(other.state_) {
    if (state_ != nullptr) state_->Ref();
  }
  StopToken(StopToken&& other) noexcept : state_(std::exchange(other.state_, nullptr)) {}
  StopToken& operator=(StopToken other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  ~StopToken() {
    if (state_ != nullptr) state_->Unref();
  }

  // True once the stop was requested (and for ever after).
  bool stop_requested() const { return state_ != nullptr && state_->stop_requested(); }
  // False for a token with no source.
  bool stop_possible() const { return state_ != nullptr; }

 private:
  friend class StopSource;
  friend class ExecutionContext;
  template <class F>
  friend class StopCallback;

  explicit StopToken(internal::StopState* state) : state_(state) {
    if (state_ != nullptr) state_->Ref();
  }

  internal::StopState* state_ = nullptr;
};

// Owns the right to request a stop. Copies share one state (any of them may request it).
// Thread-safe.
class StopSource {
 public:
  StopSource() : state_(internal::StopState::Create()) {}
  StopSource(const StopSource& other) : state_(other.state_) { state_->Ref(); }
  StopSource& operator=(StopSource other) noexcept {
    std::swap(state_, other.state_);
    return *this;
  }
  ~StopSource() {
    if (state_ != nullptr) state_->Unref();
  }

  StopToken token() const { return StopToken(state_); }
  // Requests the stop: runs every StopCallback registered on it, on this thread, and
  // wakes every interruptible wait under it. True if this call made the request; false
  // if it had been made before.
  bool RequestStop() { return state_->RequestStop(); }
  bool stop_requested() const { return state_->stop_requested(); }

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
  template <class G>
  StopCallback(const StopToken& token, G&& f) : f_(std::forward<G>(f)) {
    node_.run = &Run;
    node_.owner = this;
    if (token.state_ != nullptr) {
      if (token.state_->Add(&node_)) {
        state_ = token.state_;
        state_->Ref();
      } else {
        f_();  // requested already
      }
    }
  }
  ~StopCallback() {
    if (state_ != nullptr) {
      state_->Remove(&node_);
      state_->Unref();
    }
  }
  StopCallback(const StopCallback&) = delete;
  StopCallback& operator=(const StopCallback&) = delete;

 private:
  struct Node : internal::StopState::Callback {
    StopCallback* owner;
  };
  // noexcept: an exception from `f` terminates (as std::stop_callback's).
  static void Run(internal::StopState::Callback* node) noexcept {
    static_cast<Node*>(node)->owner->f_();
  }

  F f_;
  Node node_;
  internal::StopState* state_ = nullptr;  // registered on it (holds a reference)
};

template <class F>
StopCallback(const StopToken&, F) -> StopCallback<F>;

}  // namespace spindle

#endif  // SPINDLE_SYNC_STOP_TOKEN_H_
