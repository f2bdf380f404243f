// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_FUTURE_H_
#define SPINDLE_SYNC_FUTURE_H_

#include <atomic>
#include <chrono>
#include <cstddef>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "absl/functional/any_invocable.h"
#include "sync/event.h"
#include "sync/stop_token.h"

namespace spindle {

// Declared ahead with their default argument (T = void: a completion with no value);
// defined below, where their use across threads is described.
template <class T = void>
class Future;
template <class T = void>
class Promise;

// What a Promise that was destroyed unfulfilled leaves in its Future: BlockingGet()
// throws it, and continuations are skipped in favour of passing it on.
// Thread-safety: immutable once made; its const members may be used from any threads.
class BrokenPromise : public std::logic_error {
 public:
  // what(): "spindle::Promise destroyed without a value".
  BrokenPromise() : std::logic_error("spindle::Promise destroyed without a value") {}
};

// The value a Future<T> carries: T, or std::monostate for Future<void> (what
// BlockingTryGet() and WhenAll() hand back).
template <class T>
using FutureValue = std::conditional_t<std::is_void_v<T>, std::monostate, T>;

namespace internal {

// Stops the process with `message`, a misuse of a Promise or a Future (future.cc: glog's
// FATAL, so the message and a stack trace reach the log). Out of line so that this
// header needs no logging library.
[[noreturn]] void FutureMisuse(const char* message);

// A value (index 0) or an exception (index 1); indices, so that T = exception_ptr works.
template <class T>
using FutureOutcome = std::variant<FutureValue<T>, std::exception_ptr>;

// Whether a continuation about to run must not run on this stack: a fiber with less
// than 32 KiB of stack left, or a plain thread 256 continuations deep. Long chains of
// continuations fire one another (each fulfils the next promise), so running them all
// inline would overflow a fiber's stack.
bool ContinuationMustHop();
// Runs `f` in a new fiber (or inline if no runtime is running, where there are no
// fibers to hop to).
void HopToNewFiber(absl::AnyInvocable<void()> f);
// Counts continuation depth on a plain thread while alive (fibers check their stack).
class ContinuationDepth {
 public:
  ContinuationDepth();
  ~ContinuationDepth();
  ContinuationDepth(const ContinuationDepth&) = delete;
  ContinuationDepth& operator=(const ContinuationDepth&) = delete;

 private:
  bool counted_;
};

// The state a Promise and its Future share: one outcome, one continuation, and a
// state word that tells which of the two arrived first. Both sides arrive exactly once;
// whichever arrives second runs the continuation, on its own thread:
//
//   kEmpty --Fulfil()--> kFulfilled --Attach()--> (continuation runs in Attach())
//   kEmpty --Attach()--> kAttached --Fulfil()--> (continuation runs in Fulfil())
//
// Each side writes its half (outcome_ or continuation_) before its CAS out of kEmpty
// (release) and reads the other half only after seeing the other's state (acquire), so
// the half it reads is complete. Thread-safe for one Fulfil() and one Attach() from any
// threads; shared-owned by the Promise and the Future.
template <class T>
class FutureState {
 public:
  using Outcome = FutureOutcome<T>;
  using Continuation = absl::AnyInvocable<void(Outcome&&)>;

  void Fulfil(Outcome&& outcome) {
    outcome_.emplace(std::move(outcome));
    int expected = kEmpty;
    // acq_rel: release publishes outcome_ to Attach(); acquire (on failure, seeing
    // kAttached) pairs with Attach()'s release, making continuation_ complete here.
    if (state_.compare_exchange_strong(expected, kFulfilled, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return;
    }
    if (expected != kAttached) FutureMisuse("spindle::Promise fulfilled twice");
    Run();
  }

  void Attach(Continuation continuation) {
    continuation_ = std::move(continuation);
    int expected = kEmpty;
    // acq_rel: as in Fulfil(), with the roles swapped.
    if (state_.compare_exchange_strong(expected, kAttached, std::memory_order_acq_rel,
                                       std::memory_order_acquire)) {
      return;
    }
    if (expected != kFulfilled) FutureMisuse("spindle::Future consumed twice");
    Run();
  }

  // acquire: pairs with Fulfil()'s release; true once the outcome is in.
  bool fulfilled() const { return state_.load(std::memory_order_acquire) == kFulfilled; }

 private:
  enum : int { kEmpty, kFulfilled, kAttached };

  void Run() {
    if (!ContinuationMustHop()) {
      ContinuationDepth depth;
      continuation_(std::move(*outcome_));
      return;
    }
    HopToNewFiber([continuation = std::move(continuation_),
                   outcome = std::move(*outcome_)]() mutable {
      continuation(std::move(outcome));
    });
  }

  std::atomic<int> state_{kEmpty};
  std::optional<Outcome> outcome_;  // written by Fulfil() alone
  Continuation continuation_;       // written by Attach() alone
};

// Access to a Future's raw outcome for Then(), BlockingGet() and WhenAll().
struct FutureAccess {
  template <class T, class F>
  static void OnOutcome(Future<T>&& future, F&& f) {
    if (future.state_ == nullptr) {
      FutureMisuse("spindle::Future used after it was consumed");
    }
    auto state = std::move(future.state_);
    state->Attach(std::forward<F>(f));
  }
  template <class T>
  static void Fulfil(Promise<T>& promise, FutureOutcome<T>&& outcome) {
    promise.Fulfil(std::move(outcome));
  }
};

// Future<U> -> U, with kIsFuture; any other type stands for itself.
template <class T>
struct UnwrapFuture {
  static constexpr bool kIsFuture = false;
  using Type = T;
};
template <class T>
struct UnwrapFuture<Future<T>> {
  static constexpr bool kIsFuture = true;
  using Type = T;
};

// What `f` returns when called with a Future<T>'s value (nothing for void).
template <class T, class F>
struct ContinuationReturnOf {
  using Type = std::invoke_result_t<F&, T>;
};
template <class F>
struct ContinuationReturnOf<void, F> {
  using Type = std::invoke_result_t<F&>;
};
template <class T, class F>
using ContinuationReturn = typename ContinuationReturnOf<T, F>::Type;

// The value type of the Future that Then(f) returns: f's result, with a returned
// Future<U> flattened to U.
template <class T, class F>
using ThenValue = typename UnwrapFuture<ContinuationReturn<T, F>>::Type;

// Calls `f` with the value (none for void) and fulfils `promise` with what it returns
// or throws. A returned Future is chained: `promise` gets its outcome when it has one.
template <class R, class T, class F>
void InvokeAndFulfil(Promise<R>& promise, F& f, FutureValue<T>&& value) {
  std::exception_ptr error;
  try {
    auto call = [&]() -> decltype(auto) {
      if constexpr (std::is_void_v<T>) {
        return f();
      } else {
        return f(std::move(value));
      }
    };
    if constexpr (UnwrapFuture<ContinuationReturn<T, F>>::kIsFuture) {
      auto inner = call();  // before `promise` is moved from: call() may throw
      FutureAccess::OnOutcome(std::move(inner), [promise = std::move(promise)](
                                                    FutureOutcome<R>&& outcome) mutable {
        FutureAccess::Fulfil(promise, std::move(outcome));
      });
    } else if constexpr (std::is_void_v<R>) {
      call();
      promise.SetValue();
    } else {
      promise.SetValue(call());
    }
  } catch (...) {
    error = std::current_exception();
  }
  // Handed over after the catch block has ended, as in Async (fiber/async.h).
  if (error) promise.SetException(std::move(error));
}

}  // namespace internal

// The producing side of a one-shot value handed between fibers and threads. Set it
// once (SetValue or SetException); destroying it unset hands its Future a
// BrokenPromise. Move-only; one instance must not be used from two threads at once.
template <class T>
class Promise {
 public:
  // A promise with a new shared state (allocated: std::bad_alloc propagates), unset,
  // its future not yet taken. Take the future before setting the promise: a set
  // promise is empty, and GetFuture() on it stops the process.
  Promise() : state_(std::make_shared<internal::FutureState<T>>()) {}
  Promise(Promise&&) noexcept = default;
  // Moving (this and the constructor above) hands over the state; the moved-from
  // promise is empty (setting it, or GetFuture(), stops the process; destroying it does
  // nothing). Assigning first breaks this promise if it is unset (its future gets a
  // BrokenPromise).
  Promise& operator=(Promise&& other) noexcept {
    BreakIfUnset();
    state_ = std::move(other.state_);
    future_taken_ = other.future_taken_;
    return *this;
  }
  ~Promise() { BreakIfUnset(); }

  // The Future of this promise; callable once.
  Future<T> GetFuture() {
    if (state_ == nullptr || future_taken_) {
      internal::FutureMisuse(
          "spindle::Promise::GetFuture() called twice or on a moved-from promise");
    }
    future_taken_ = true;
    return Future<T>(state_);
  }

  // Sets the value and runs the continuation attached to the future, if any, on this
  // thread before returning (see Future::Then()).
  template <class... Args>
  void SetValue(Args&&... args) {
    Fulfil(typename internal::FutureState<T>::Outcome(std::in_place_index<0>,
                                                        std::forward<Args>(args)...));
  }
  // Sets the exception `error` instead of a value, as SetValue() sets a value: it runs
  // the attached continuation, if any, on this thread. A null `error` stops the process
  // with a message, as does setting a promise twice or a moved-from one.
  void SetException(std::exception_ptr error) {
    if (error == nullptr) {
      internal::FutureMisuse("spindle::Promise::SetException(nullptr)");
    }
    Fulfil(typename internal::FutureState<T>::Outcome(std::in_place_index<1>,
                                                        std::move(error)));
  }

 private:
  friend struct internal::FutureAccess;

  void Fulfil(internal::FutureOutcome<T>&& outcome) {
    if (state_ == nullptr) {
      internal::FutureMisuse("spindle::Promise set twice or used after a move");
    }
    auto state = std::move(state_);
    state->Fulfil(std::move(outcome));
  }
  void BreakIfUnset() {
    if (state_ != nullptr) SetException(std::make_exception_ptr(BrokenPromise()));
  }

  std::shared_ptr<internal::FutureState<T>> state_;  // null once set or moved from
  bool future_taken_ = false;
};

// The consuming side: a value of type T (or completion, for Future<void>), or an
// exception, that arrives later. Consumed exactly once: by Then(), BlockingGet(),
// BlockingTryGet(), WhenAll() or WhenAny(). Move-only.
//
// Thread-safety: not for concurrent use. A Future may be moved to another thread (or
// fiber) and used or consumed there, but calls on one Future object must not overlap:
// not even valid() or is_ready() while another thread moves or consumes it. Its Promise
// may be set from any thread at the same time as any call on the Future; the shared
// state orders the two, and a continuation runs on whichever side comes second.
template <class T>
class Future {
 public:
  // The type of the value it carries (void for a completion).
  using ValueType = T;

  Future() = default;  // not valid(); for assigning to later
  Future(Future&&) noexcept = default;
  Future& operator=(Future&&) noexcept = default;

  // Whether it still has a state to consume: false when default-constructed, moved
  // from or consumed. Consuming a future that is not valid stops the process.
  bool valid() const { return state_ != nullptr; }
  // True once the value or exception is in (a continuation may still run later).
  bool is_ready() const { return state_ != nullptr && state_->fulfilled(); }

  // Consumes this future; `f` receives its value (nothing for Future<void>) when it
  // arrives, and the returned future gets what `f` returns (a returned Future<U> is
  // flattened to Future<U>) or throws. An exception in this future skips `f` and is
  // passed on. `f` runs exactly once, on the thread that fulfils the promise, or on
  // this thread if the value is already in; on a new fiber when a long chain would
  // overflow the stack. `f` should not block for long: it may run on the fulfilling
  // thread in the middle of its work.
  template <class F>
  auto Then(F&& f) && -> Future<internal::ThenValue<T, std::decay_t<F>>> {
    using R = internal::ThenValue<T, std::decay_t<F>>;
    Promise<R> promise;
    Future<R> next = promise.GetFuture();
    internal::FutureAccess::OnOutcome(
        std::move(*this), [promise = std::move(promise), f = std::forward<F>(f)](
                              internal::FutureOutcome<T>&& outcome) mutable {
          if (outcome.index() == 1) {
            promise.SetException(std::get<1>(std::move(outcome)));
            return;
          }
          internal::InvokeAndFulfil<R, T>(promise, f, std::get<0>(std::move(outcome)));
        });
    return next;
  }

 private:
  template <class>
  friend class Promise;
  friend struct internal::FutureAccess;

  explicit Future(std::shared_ptr<internal::FutureState<T>> state) : state_(std::move(state)) {}

  std::shared_ptr<internal::FutureState<T>> state_;
};

// A future that is ready from the start.
template <class T>
Future<std::decay_t<T>> MakeReadyFuture(T&& value) {
  Promise<std::decay_t<T>> promise;
  auto future = promise.GetFuture();
  promise.SetValue(std::forward<T>(value));
  return future;
}
inline Future<void> MakeReadyFuture() {
  Promise<void> promise;
  auto future = promise.GetFuture();
  promise.SetValue();
  return future;
}
// A future that holds the exception `error` from the start; T is given explicitly
// (MakeExceptionalFuture<int>(error)). A null `error` stops the process with a message,
// as Promise::SetException() does.
template <class T>
Future<T> MakeExceptionalFuture(std::exception_ptr error) {
  Promise<T> promise;
  auto future = promise.GetFuture();
  promise.SetException(std::move(error));
  return future;
}

namespace internal {

// Waits for `ready` as a wait for a future (what the fiber dump shows). Out of line.
void WaitForFuture(Event& ready);
// The same, until `deadline` (interruptible); false if it came first or a cancellation.
bool WaitForFutureUntil(Event& ready, std::chrono::steady_clock::time_point deadline);

// Where a blocking wait receives the outcome: shared with the continuation, so a
// waiter that gave up (timed out) leaves it to the continuation to free.
template <class T>
struct BlockingSlot {
  Event ready;
  std::optional<FutureOutcome<T>> outcome;  // written before ready.Set()
};

template <class T>
std::shared_ptr<BlockingSlot<T>> WaitInSlot(Future<T>&& future) {
  auto slot = std::make_shared<BlockingSlot<T>>();
  FutureAccess::OnOutcome(std::move(future), [slot](FutureOutcome<T>&& outcome) {
    slot->outcome.emplace(std::move(outcome));
    slot->ready.Set();  // Set()/Wait() order the write of `outcome` before the reader
  });
  return slot;
}

template <class T>
FutureValue<T> ValueOrThrow(FutureOutcome<T>&& outcome) {
  if (outcome.index() == 1) std::rethrow_exception(std::get<1>(std::move(outcome)));
  return std::get<0>(std::move(outcome));
}

template <class Outcome>
std::exception_ptr ErrorOf(const Outcome& outcome) {
  return outcome.index() == 1 ? std::get<1>(outcome) : nullptr;
}

// Counts one input of a WhenAll() in, after its outcome was stored; the last one in
// completes the result (`Gather` has `remaining` and Finish()).
template <class Gather>
void ArriveAtGather(Gather& gather) {
  // acq_rel: each arrival releases its outcome; the last one acquires them all.
  if (gather.remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) gather.Finish();
}

// Attaches the I-th future of a WhenAll() to its gather state (`Gather` has
// `outcomes`, a tuple of optional outcomes, `remaining` and Finish()).
template <std::size_t I, class Gather, class T>
void AttachOne(const std::shared_ptr<Gather>& gather, Future<T>&& future) {
  FutureAccess::OnOutcome(std::move(future), [gather](FutureOutcome<T>&& outcome) {
    std::get<I>(gather->outcomes).emplace(std::move(outcome));
    ArriveAtGather(*gather);
  });
}
template <class Gather, std::size_t... I, class... Ts>
void AttachAll(const std::shared_ptr<Gather>& gather, std::index_sequence<I...>,
               Future<Ts>&&... futures) {
  (AttachOne<I>(gather, std::move(futures)), ...);
}

}  // namespace internal

// Waits for `future` and returns its value, or throws its exception. A fiber parks; a
// plain thread blocks.
template <class T>
T BlockingGet(Future<T>&& future) {
  auto slot = internal::WaitInSlot(std::move(future));
  internal::WaitForFuture(slot->ready);
  if constexpr (std::is_void_v<T>) {
    internal::ValueOrThrow<T>(std::move(*slot->outcome));
  } else {
    return internal::ValueOrThrow<T>(std::move(*slot->outcome));
  }
}

// Like BlockingGet(), giving up after `timeout`: std::nullopt then (the value that
// arrives later is dropped). Future<void> gives std::optional<std::monostate>.
// Interruptible (as Event::WaitUntil()): std::nullopt too if the caller's execution
// context is cancelled or its deadline passes first. BlockingGet() is not.
template <class T, class Rep, class Period>
std::optional<FutureValue<T>> BlockingTryGet(
    Future<T>&& future, std::chrono::duration<Rep, Period> timeout) {
  auto slot = internal::WaitInSlot(std::move(future));
  const bool ready = internal::WaitForFutureUntil(
      slot->ready, std::chrono::steady_clock::now() +
                       std::chrono::duration_cast<std::chrono::steady_clock::duration>(timeout));
  if (!ready) return std::nullopt;
  return internal::ValueOrThrow<T>(std::move(*slot->outcome));
}

// A future of all the values of `futures`, in their order, once every one is in. If
// any holds an exception, the result holds the first such exception (in index order),
// still only after all are in. Future<void> inputs give a Future<void>.
template <class T>
auto WhenAll(std::vector<Future<T>>&& futures)
    -> Future<std::conditional_t<std::is_void_v<T>, void, std::vector<T>>> {
  using R = std::conditional_t<std::is_void_v<T>, void, std::vector<T>>;
  struct Gather {
    explicit Gather(std::size_t n) : outcomes(n), remaining(n) {}
    std::vector<std::optional<internal::FutureOutcome<T>>> outcomes;
    std::atomic<std::size_t> remaining;
    Promise<R> promise;

    void Finish() {
      std::vector<FutureValue<T>> values;
      values.reserve(outcomes.size());
      for (auto& outcome : outcomes) {
        if (outcome->index() == 1) {
          promise.SetException(std::get<1>(std::move(*outcome)));
          return;
        }
        values.push_back(std::get<0>(std::move(*outcome)));
      }
      if constexpr (std::is_void_v<T>) {
        promise.SetValue();
      } else {
        promise.SetValue(std::move(values));
      }
    }
  };
  auto gather = std::make_shared<Gather>(futures.size());
  Future<R> result = gather->promise.GetFuture();
  if (futures.empty()) {
    gather->Finish();
    return result;
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    internal::FutureAccess::OnOutcome(
        std::move(futures[i]), [gather, i](internal::FutureOutcome<T>&& outcome) {
          gather->outcomes[i].emplace(std::move(outcome));
          internal::ArriveAtGather(*gather);
        });
  }
  return result;
}

// WhenAll of futures of different types: a future of the tuple of their values
// (std::monostate for a Future<void>).
template <class... Ts>
Future<std::tuple<FutureValue<Ts>...>> WhenAll(Future<Ts>&&... futures) {
  using R = std::tuple<FutureValue<Ts>...>;
  struct Gather {
    std::tuple<std::optional<internal::FutureOutcome<Ts>>...> outcomes;
    std::atomic<std::size_t> remaining{sizeof...(Ts)};
    Promise<R> promise;

    void Finish() {
      std::exception_ptr error;
      std::apply([&](auto&... o) { ((error = error ? error : internal::ErrorOf(*o)), ...); },
                 outcomes);
      if (error) {
        promise.SetException(error);
        return;
      }
      promise.SetValue(std::apply(
          [](auto&... o) { return R(std::get<0>(std::move(*o))...); }, outcomes));
    }
  };
  auto gather = std::make_shared<Gather>();
  Future<R> result = gather->promise.GetFuture();
  internal::AttachAll(gather, std::index_sequence_for<Ts...>(), std::move(futures)...);
  return result;
}

// What WhenAny() hands back: which future arrived first, and its value.
template <class T>
struct WhenAnyResult {
  // The first future's index in WhenAny()'s vector, and its value (std::monostate for a
  // Future<void>).
  std::size_t index;
  FutureValue<T> value;
};

// A future of the first of `futures` to arrive: its index and value, or the exception
// it holds (the first to arrive decides, value or exception). The others are consumed
// and their outcomes dropped when they arrive. With `cancel_rest`, its stop is
// requested once the first has arrived, before the result is set: give its token to
// whatever produces the others (a child ExecutionContext with Options::stop_token, say)
// so that hedged or raced work stops. An empty `futures` gives a future holding
// std::invalid_argument. Waiting for the result is interruptible as any future's
// (BlockingTryGet()).
//
//   auto first = WhenAny(std::move(replies));                 // reply or hedge
//   auto got = BlockingTryGet(std::move(first), 200ms);       // or the timeout
template <class T>
Future<WhenAnyResult<T>> WhenAny(std::vector<Future<T>>&& futures,
                                 std::optional<StopSource> cancel_rest = std::nullopt) {
  struct Race {
    std::atomic<bool> decided{false};
    Promise<WhenAnyResult<T>> promise;  // set by the winner alone
    std::optional<StopSource> cancel_rest;
  };
  auto race = std::make_shared<Race>();
  race->cancel_rest = std::move(cancel_rest);
  Future<WhenAnyResult<T>> result = race->promise.GetFuture();
  if (futures.empty()) {
    race->promise.SetException(std::make_exception_ptr(
        std::invalid_argument("spindle::WhenAny() of 0 futures: at least 1 is needed")));
    return result;
  }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    internal::FutureAccess::OnOutcome(
        std::move(futures[i]), [race, i](internal::FutureOutcome<T>&& outcome) {
          // relaxed: exactly one exchange on the word reads false (its modification
          // order); the winner alone touches the promise, whose own state orders the
          // value for the result's reader.
          if (race->decided.exchange(true, std::memory_order_relaxed)) return;
          if (race->cancel_rest.has_value()) race->cancel_rest->RequestStop();
          if (outcome.index() == 1) {
            race->promise.SetException(std::get<1>(std::move(outcome)));
          } else {
            race->promise.SetValue(WhenAnyResult<T>{i, std::get<0>(std::move(outcome))});
          }
        });
  }
  return result;
}

}  // namespace spindle

#endif  // SPINDLE_SYNC_FUTURE_H_
