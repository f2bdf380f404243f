// Copyright 2026 The Spindle Authors.
//
// Execution contexts: per-request state (a trace id, a deadline, credentials) that
// follows a request into the fibers it starts, instead of staying with one fiber.
//
//   spindle::ExecutionLocal<RequestInfo> request_info;   // a static
//
//   void Handle(Request r) {                              // in the request's fiber
//     spindle::ScopedExecutionContext scope(spindle::ExecutionContext::Create());
//     request_info->trace_id = r.trace_id;
//     spindle::Fiber::Attributes inherit;
//     inherit.inherit_execution_context = true;
//     spindle::Fiber child(inherit, [] { Log(request_info->trace_id); });  // same one
//     spindle::StartFiberDetached(spindle::CaptureExecutionContext([] { Audit(); }));
//     child.join();
//   }
//
// A context also carries a cancellation and a deadline, which every interruptible wait
// made in it honours (the timed waits of sync/, this_fiber::SleepUntil(),
// BlockingTryGet(): each ends early, with its documented result, once the context is
// cancelled or its deadline passes):
//
//   spindle::ExecutionContext::Options options;
//   options.deadline = std::chrono::steady_clock::now() + 200ms;
//   auto request = spindle::ExecutionContext::Create(options);
//   spindle::ScopedExecutionContext scope(request);
//   if (!reply_ready.WaitFor(1s)) { ... }   // false by 200 ms, or once Cancel()ed
//   ...
//   request->Cancel();                        // from anywhere: the client went away
//
// A child context (Options::parent) is cancelled with its parent and never outlives
// its parent's deadline; its values are its own.
//
// A fiber runs in no context until it enters one (ScopedExecutionContext); a fiber
// started with Fiber::Attributes::inherit_execution_context, or whose function was
// wrapped by CaptureExecutionContext(), runs in the context its starter was in when it
// started it. Other fibers do not see it, and a fiber that join() runs inline sees only
// what it would see on a stack of its own (its starter's context if it inherits one,
// else none). Go passes context.Context by hand; tRPC-Cpp and flare keep theirs in the
// fiber, as this does.

#ifndef SPINDLE_FIBER_EXECUTION_CONTEXT_H_
#define SPINDLE_FIBER_EXECUTION_CONTEXT_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/local_storage.h"
#include "fiber/internal/os_mutex.h"
#include "sync/internal/stop_state.h"
#include "sync/stop_token.h"

namespace spindle {

// Declared ahead for ExecutionContext's friend declaration; defined below, where its
// thread-safety is described.
template <class T>
class ExecutionLocal;

namespace internal {
[[noreturn]] void DieOutsideExecutionContext();
}  // namespace internal

// The state of one request: ExecutionLocal values, shared by every fiber (or thread)
// that runs in the context. Created by Create(), entered with ScopedExecutionContext,
// kept alive by shared_ptr: by the scopes that entered it and by the fibers and
// callbacks that inherited it. Destroying the last reference destroys its values, on
// that thread.
//
// Thread-safety: thread-safe. The values themselves are shared by all fibers of the
// context: a value that they change concurrently must be synchronized by its type.
class ExecutionContext : public std::enable_shared_from_this<ExecutionContext> {
 public:
  // What a new context is tied to.
  struct Options {
    // Cancelled when `parent` is; its deadline is never later than the parent's. The
    // parent is kept alive as long as the child. Its ExecutionLocal values are not
    // shared with the child.
    std::shared_ptr<ExecutionContext> parent;
    // Also cancelled when this token's stop is requested.
    StopToken stop_token;
    // No interruptible wait made in the context lasts beyond it (max(): none).
    std::chrono::steady_clock::time_point deadline =
        std::chrono::steady_clock::time_point::max();
  };

  // A new context tied as `options` say (the first overload: no parent, no token, no
  // deadline). It starts cancelled if the parent is cancelled or the token's stop was
  // requested already; its deadline is the earlier of `options.deadline` and the
  // parent's. It is not entered: enter it with ScopedExecutionContext. Thread-safe. It
  // allocates (std::bad_alloc propagates) and has no other failure.
  static std::shared_ptr<ExecutionContext> Create() { return Create(Options()); }
  static std::shared_ptr<ExecutionContext> Create(Options options);

  // Cancels the context and every child of it: each interruptible wait made in it,
  // parked now or later, returns early with its cancelled result. Callable from any
  // thread, any number of times (later calls do nothing). Runs the StopCallbacks
  // registered on stop_token() on the calling thread.
  void Cancel() { stop_->RequestStop(); }
  // Whether the context is cancelled: by Cancel(), by its parent's cancellation or by
  // its token's stop. A passed deadline does not make it cancelled. Thread-safe.
  bool cancelled() const { return stop_->stop_requested(); }
  // Stopped when the context is cancelled.
  StopToken stop_token() const { return StopToken(stop_); }
  // The deadline fixed by Create(): the earlier of `Options::deadline` and the parent's;
  // max() if none. It never changes. Thread-safe.
  std::chrono::steady_clock::time_point deadline() const {
    return limits_.deadline.time_point();
  }

  // Current()'s stop token; a token that is never stopped outside any context.
  static StopToken CurrentStopToken();

  // The context the calling fiber (or plain thread) runs in; nullptr if none. Valid
  // while the caller stays in it.
  static ExecutionContext* Current();
  // Current() as a reference that keeps it alive; null if none.
  static std::shared_ptr<ExecutionContext> CaptureCurrent();

  ~ExecutionContext();
  ExecutionContext(const ExecutionContext&) = delete;
  ExecutionContext& operator=(const ExecutionContext&) = delete;

 private:
  template <class T>
  friend class ExecutionLocal;
  friend class ScopedExecutionContext;

  static constexpr std::uint32_t kInlineSlots = 8;

  // Requests the stop of `child` when the state it is linked to is stopped.
  struct Link : internal::StopState::Callback {
    internal::StopState* to = nullptr;  // linked there (holds a reference)
    ExecutionContext* child = nullptr;
  };

  explicit ExecutionContext(Options options);
  // Links `link` to `state` (a parent's or a token's); a state stopped already stops
  // ours at once.
  void LinkTo(Link& link, internal::StopState* state);
  static void RunLink(internal::StopState::Callback* node) noexcept;

  // The key's value, or nullptr. Lock-free for the first kInlineSlots indices.
  internal::LocalBox* Find(const internal::LocalKey& key) const {
    if (key.index < kInlineSlots) {
      // acquire: pairs with the release in Install(), so the value is constructed.
      internal::LocalBox* box = inline_slots_[key.index].load(std::memory_order_acquire);
      return box != nullptr && box->generation == key.generation ? box : nullptr;
    }
    return FindOverflow(key);
  }
  internal::LocalBox* FindOverflow(const internal::LocalKey& key) const;
  // Puts `box` in the key's slot unless a value of the key got there first: returns the
  // box that holds the key's value (`box`, or the other one; then `box` is destroyed).
  internal::LocalBox* Install(const internal::LocalKey& key, internal::LocalBox* box);

  std::atomic<internal::LocalBox*> inline_slots_[kInlineSlots] = {};
  mutable internal::OsMutex mutex_;
  std::vector<internal::LocalBox*> overflow_ ABSL_GUARDED_BY(mutex_);  // index kInlineSlots + i
  // Stale values (of keys destroyed since) replaced in the lock-free slots: a reader
  // may still be looking at one, so they live as long as the context.
  std::vector<internal::LocalBox*> retired_ ABSL_GUARDED_BY(mutex_);

  internal::StopState* const stop_;  // our own (one reference)
  internal::WaitLimits limits_;      // what the waits made in us honour
  const std::shared_ptr<ExecutionContext> parent_;
  Link parent_link_;
  Link token_link_;
};

// Makes `context` (which may be null: "no context") the calling fiber's (or thread's)
// current one for the scope's lifetime, then restores the previous one. Scopes nest;
// destroy them in reverse order, on the fiber that created them (the fiber may have
// moved to another worker meanwhile: that is fine).
class ScopedExecutionContext {
 public:
  // Enters `context` (null: leaves every context for the scope) and holds a reference
  // to it until the scope ends. Misuse is not detected: a scope destroyed out of order,
  // or on another fiber than its own, leaves its fiber in the wrong context.
  explicit ScopedExecutionContext(std::shared_ptr<ExecutionContext> context);
  ~ScopedExecutionContext();
  ScopedExecutionContext(const ScopedExecutionContext&) = delete;
  ScopedExecutionContext& operator=(const ScopedExecutionContext&) = delete;

 private:
  internal::FiberLocalStorage* const storage_;
  const std::shared_ptr<ExecutionContext> context_;
  void* const previous_;
  const internal::WaitLimits* const previous_limits_;
};

// Wraps `f` so that it runs in the context current now (or in none, if none is), on
// whatever fiber or thread calls it later: for StartFiberDetached,
// BatchStartFiberDetached, timers and future continuations.
template <class F>
auto CaptureExecutionContext(F&& f) {
  return [context = ExecutionContext::CaptureCurrent(),
          f = std::forward<F>(f)](auto&&... args) mutable -> decltype(auto) {
    ScopedExecutionContext scope(context);
    return std::invoke(f, std::forward<decltype(args)>(args)...);
  };
}

// One T per execution context, like FiberLocal<T> per fiber. get() returns the current
// context's value, constructed (T()) on first use; nullptr when the caller runs in no
// context. If two fibers of a context construct it at once, one value is kept and the
// other destroyed at once. The value lives until its context is destroyed.
//
// Thread-safety: get() is thread-safe; the value is shared (see ExecutionContext).
// Make ExecutionLocals statics or members of long-lived objects (as FiberLocal).
template <class T>
class ExecutionLocal {
 public:
  // Takes a key of the execution-context key space (a destroyed ExecutionLocal's index
  // may be reused; values left under its key are never seen through the new one).
  // Thread-safe. Running out of keys (2^32 - 1) stops the process with a message.
  ExecutionLocal()
      : key_(internal::AllocateLocalKey(internal::LocalKeySpace::kExecutionContext)) {}
  ~ExecutionLocal() {
    internal::FreeLocalKey(internal::LocalKeySpace::kExecutionContext, key_);
  }
  ExecutionLocal(const ExecutionLocal&) = delete;
  ExecutionLocal& operator=(const ExecutionLocal&) = delete;

  // The calling fiber's (or thread's) current context's value, constructed on first
  // use; nullptr when the caller runs in no context. Valid while the context lives. An
  // exception from T() propagates and leaves no value behind.
  T* get() {
    ExecutionContext* context = ExecutionContext::Current();
    return context != nullptr ? get(context) : nullptr;
  }
  // The value in `context` (not null), constructed on first use.
  T* get(ExecutionContext* context) {
    internal::LocalBox* box = context->Find(key_);
    if (box == nullptr) {
      box = context->Install(key_, new internal::TypedLocalBox<T>(key_.generation));
    }
    return &static_cast<internal::TypedLocalBox<T>*>(box)->value;
  }
  // get(), but outside any context a fatal error instead of nullptr.
  T* operator->() { return GetOrDie(); }
  T& operator*() { return *GetOrDie(); }

 private:
  T* GetOrDie() {
    ExecutionContext* context = ExecutionContext::Current();
    if (__builtin_expect(context == nullptr, 0)) internal::DieOutsideExecutionContext();
    return get(context);
  }

  const internal::LocalKey key_;
};

}  // namespace spindle

#endif  // SPINDLE_FIBER_EXECUTION_CONTEXT_H_
