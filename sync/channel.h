// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_CHANNEL_H_
#define SPINDLE_SYNC_CHANNEL_H_

#include <chrono>
#include <cstddef>
#include <iterator>
#include <new>
#include <type_traits>
#include <utility>

#include "fiber/internal/wait_types.h"
#include "sync/internal/channel_core.h"

namespace spindle {

// How a channel operation ended:
//   kOk          the value was sent, or received;
//   kClosed      a send found the channel closed (nothing was sent: the value stays with
//                the caller); a receive found it closed with no value left;
//   kWouldBlock  a Try form (or TrySelect()) found nothing ready;
//   kTimedOut    the deadline came first (the call's, or its execution context's);
//   kCancelled   the caller's execution context was cancelled.
using ChannelStatus = internal::ChannelStatus;

// The name of a ChannelStatus ("ok", "closed", "would_block", "timed_out",
// "cancelled"), for messages.
const char* ChannelStatusName(ChannelStatus status);

namespace internal {
// `timeout` from now; one past what the clock can hold is no deadline, and a zero or
// negative one has passed already.
template <class Rep, class Period>
MonotonicDeadline DeadlineAfter(std::chrono::duration<Rep, Period> timeout) {
  if (timeout <= timeout.zero()) return MonotonicDeadline::Expired();
  if (std::chrono::duration<double>(timeout).count() >= 9e9) return MonotonicDeadline::None();
  return MonotonicDeadline::In(std::chrono::duration_cast<std::chrono::nanoseconds>(timeout));
}
}  // namespace internal

// The outcome of a receive: the value, or why there is none. Holds the value inline
// (no allocation). Move-only. Not thread-safe: one thread (or fiber) uses it at a time,
// as any value.
template <class T>
class ReceiveResult {
 public:
  // Nothing received (kWouldBlock): what a Select's receive case holds until it happens.
  ReceiveResult() {}
  ReceiveResult(ReceiveResult&& other) noexcept : status_(other.status_) {
    if (ok()) ::new (&value_) T(std::move(other.value_));
  }
  ReceiveResult& operator=(ReceiveResult&& other) noexcept {
    if (this != &other) {
      Reset();
      status_ = other.status_;
      if (ok()) ::new (&value_) T(std::move(other.value_));
    }
    return *this;
  }
  ~ReceiveResult() { Reset(); }

  // kOk with a value; otherwise why there is none.
  ChannelStatus status() const { return status_; }
  // Whether a value was received.
  bool ok() const { return status_ == ChannelStatus::kOk; }
  // ok(), for `if (auto r = channel.Receive())`.
  explicit operator bool() const { return ok(); }
  // The value; only when ok().
  T& value() & { return value_; }
  // The value; only when ok().
  const T& value() const& { return value_; }
  // The value, to move from; only when ok().
  T&& value() && { return std::move(value_); }
  // value().
  T& operator*() & { return value_; }
  // value(), to move from.
  T&& operator*() && { return std::move(value_); }
  // &value().
  T* operator->() { return &value_; }
  // &value().
  const T* operator->() const { return &value_; }

 private:
  template <class U>
  friend class Channel;
  template <class U>
  friend class ReceiveCase;

  void Reset() {
    if (ok()) value_.~T();
    status_ = ChannelStatus::kWouldBlock;
  }
  // The storage a receive constructs the value in; status_ says whether it did.
  void* storage() { return &value_; }

  ChannelStatus status_ = ChannelStatus::kWouldBlock;
  union {
    T value_;
  };
};

// A typed, optionally buffered channel, as Go's chan: fibers and plain threads (any
// mix) send values into it and receive them, in order, each value exactly once.
//
//   - Capacity N > 0 buffers up to N values: Send() waits only while N are buffered.
//     Capacity 0 is a rendezvous: Send() waits for a receiver to take the value.
//   - Close() ends the stream: later sends fail with kClosed (the value stays with the
//     sender), receivers drain what is buffered, then get kClosed. Every blocked
//     operation wakes.
//   - The plain forms (Send, Receive) wait as long as it takes and are not
//     interruptible; the Until/For forms stop at their deadline (kTimedOut) and when the
//     caller's execution context is cancelled (kCancelled), or at its deadline; the Try
//     forms never wait (kWouldBlock).
//   - A value is moved exactly once into the channel and once out. An operation that
//     times out or is cancelled did not happen, even when it raced a partner that was
//     about to complete it: that partner moves on to another. No allocation per
//     operation; the buffer is allocated once.
//   - Select() (below) waits on several operations, on channels of any types.
// T must be nothrow move-constructible (values move under the channel's lock). The
// channel must outlive every operation on it: destroying it while a fiber or thread is
// blocked on it stops the process with a message. Thread-safe.
template <class T>
class Channel {
  static_assert(std::is_nothrow_move_constructible_v<T>,
                "spindle::Channel<T>: T must be nothrow move-constructible");
  static_assert(std::is_nothrow_destructible_v<T>,
                "spindle::Channel<T>: T must be nothrow destructible");

 public:
  // The element type.
  using value_type = T;

  // A channel of `capacity` buffered values (0: a rendezvous). A capacity over 2^30
  // stops the process with a message.
  explicit Channel(std::size_t capacity = 0)
      : core_(capacity, internal::ChannelOpsFor<T>::kOps) {}
  Channel(const Channel&) = delete;
  Channel& operator=(const Channel&) = delete;

  // Sends `value`, waiting while the channel is full (or, for a rendezvous, until a
  // receiver takes it). kOk, or kClosed (`value` is left as it was).
  ChannelStatus Send(T&& value) { return SendImpl(&value, true, None(), nullptr); }
  // Sends a copy of `value`: as Send(T&&).
  template <class U = T, class = std::enable_if_t<std::is_copy_constructible_v<U>>>
  ChannelStatus Send(const T& value) {
    T copy(value);
    return Send(std::move(copy));
  }
  // Sends only if that needs no wait: kOk, kWouldBlock or kClosed (`value` is left as
  // it was unless kOk).
  ChannelStatus TrySend(T&& value) { return SendImpl(&value, false, None(), nullptr); }
  // Send() that gives up at `deadline` (kTimedOut) or when the caller's execution
  // context is cancelled (kCancelled) or reaches its own deadline; `value` is left as
  // it was unless kOk.
  ChannelStatus SendUntil(T&& value, std::chrono::steady_clock::time_point deadline) {
    return SendImpl(&value, true, internal::MonotonicDeadline::At(deadline),
                    internal::CurrentWaitLimits());
  }
  // SendUntil() with the deadline `timeout` from now.
  template <class Rep, class Period>
  ChannelStatus SendFor(T&& value, std::chrono::duration<Rep, Period> timeout) {
    return SendImpl(&value, true, internal::DeadlineAfter(timeout),
                    internal::CurrentWaitLimits());
  }

  // Receives the oldest value, waiting while the channel is empty: a value (kOk), or
  // kClosed once the channel is closed and drained.
  ReceiveResult<T> Receive() { return ReceiveImpl(true, None(), nullptr); }
  // Receives only if that needs no wait: kOk, kWouldBlock or kClosed.
  ReceiveResult<T> TryReceive() { return ReceiveImpl(false, None(), nullptr); }
  // Receive() that gives up at `deadline` (kTimedOut) or when the caller's execution
  // context is cancelled (kCancelled) or reaches its own deadline.
  ReceiveResult<T> ReceiveUntil(std::chrono::steady_clock::time_point deadline) {
    return ReceiveImpl(true, internal::MonotonicDeadline::At(deadline),
                       internal::CurrentWaitLimits());
  }
  // ReceiveUntil() with the deadline `timeout` from now.
  template <class Rep, class Period>
  ReceiveResult<T> ReceiveFor(std::chrono::duration<Rep, Period> timeout) {
    return ReceiveImpl(true, internal::DeadlineAfter(timeout),
                       internal::CurrentWaitLimits());
  }

  // Closes the channel: every blocked operation wakes (a blocked sender with kClosed,
  // its value not sent), later sends fail, receives drain the buffer and then report
  // kClosed. True for the call that closed it; false if it was closed already.
  bool Close() { return core_.Close(); }
  // Whether Close() was called.
  bool closed() const { return core_.closed(); }
  // How many values are buffered now.
  std::size_t size() const { return core_.size(); }
  // The capacity given at construction.
  std::size_t capacity() const { return core_.capacity(); }

  // Iterates over the values received until the channel is closed and drained:
  // `for (T& v : channel)` (each step is a Receive()). An input iterator: one thread
  // (or fiber) uses it; several may iterate over one channel, each with its own, and
  // each value goes to one of them.
  class iterator {
   public:
    // An input iterator's traits.
    using iterator_category = std::input_iterator_tag;
    // The element type.
    using value_type = T;
    // An input iterator's traits.
    using difference_type = std::ptrdiff_t;
    // An input iterator's traits.
    using pointer = T*;
    // An input iterator's traits.
    using reference = T&;

    // The end.
    iterator() = default;
    // The value received last.
    reference operator*() { return *current_; }
    // The value received last.
    pointer operator->() { return &*current_; }
    // Receives the next value (waits for it), or becomes the end once the channel is
    // closed and drained.
    iterator& operator++() {
      current_ = channel_->Receive();
      if (!current_) channel_ = nullptr;
      return *this;
    }
    friend bool operator==(const iterator& a, const iterator& b) {
      return a.channel_ == b.channel_;
    }
    friend bool operator!=(const iterator& a, const iterator& b) { return !(a == b); }

   private:
    friend class Channel;
    explicit iterator(Channel* channel) : channel_(channel) { ++*this; }

    Channel* channel_ = nullptr;  // null at the end
    ReceiveResult<T> current_;
  };
  // The first value received (waits for it), or end() once closed and drained.
  iterator begin() { return iterator(this); }
  // The end of the stream.
  iterator end() { return iterator(); }

 private:
  template <class U>
  friend class SendCase;
  template <class U>
  friend class ReceiveCase;

  static constexpr internal::MonotonicDeadline None() {
    return internal::MonotonicDeadline::None();
  }
  ChannelStatus SendImpl(T* value, bool may_block, internal::MonotonicDeadline deadline,
                         const internal::WaitLimits* limits) {
    return core_.Send(value, may_block, deadline, limits);
  }
  ReceiveResult<T> ReceiveImpl(bool may_block, internal::MonotonicDeadline deadline,
                               const internal::WaitLimits* limits) {
    ReceiveResult<T> result;
    result.status_ = core_.Receive(result.storage(), may_block, deadline, limits);
    return result;
  }

  internal::ChannelCore core_;
};

// A Select case that sends `value` on `channel`: moved from only if this case happens
// with kOk. A null channel makes a case that is never ready (as Go's nil channel). A
// case belongs to the one Select call it is given to, on the calling thread (or fiber).
template <class T>
class SendCase {
 public:
  // The case of sending `value` (which must outlive the Select) on `channel`.
  SendCase(Channel<T>& channel, T& value) : SendCase(&channel, value) {}
  // As above; a null `channel` is never ready.
  SendCase(Channel<T>* channel, T& value)
      : case_{channel != nullptr ? &channel->core_ : nullptr, &value, true} {}

  // The engine's view of the case.
  internal::SelectCase raw() const { return case_; }
  // Records the outcome when this case happened (a send has nothing to record).
  void Finish(ChannelStatus) {}

 private:
  internal::SelectCase case_;
};

// A Select case that receives from `channel` into `*out`: when this case happens, `*out`
// holds the value (kOk) or kClosed. A null channel makes a case that is never ready. A
// case belongs to the one Select call it is given to, on the calling thread (or fiber).
template <class T>
class ReceiveCase {
 public:
  // The case of receiving from `channel` into `out` (which must outlive the Select).
  ReceiveCase(Channel<T>& channel, ReceiveResult<T>& out) : ReceiveCase(&channel, out) {}
  // As above; a null `channel` is never ready.
  ReceiveCase(Channel<T>* channel, ReceiveResult<T>& out)
      : out_(&out), case_{channel != nullptr ? &channel->core_ : nullptr, nullptr, false} {
    out.Reset();
    case_.slot = out.storage();
  }

  // The engine's view of the case.
  internal::SelectCase raw() const { return case_; }
  // Records the outcome when this case happened: a value constructed in `*out` (kOk),
  // or kClosed.
  void Finish(ChannelStatus status) { out_->status_ = status; }

 private:
  ReceiveResult<T>* out_;
  internal::SelectCase case_;
};

// What a Select did: the index (from 0, in the order given) of the case that happened
// and its status (kOk, or kClosed: a closed channel is ready, for both sides); or index
// -1 with kWouldBlock (TrySelect), kTimedOut or kCancelled.
struct SelectResult {
  // The case that happened, or -1.
  int index;
  // kOk or kClosed for a case; kWouldBlock, kTimedOut or kCancelled for none.
  ChannelStatus status;
};

namespace internal {
template <class... Cases>
SelectResult RunSelect(bool may_block, MonotonicDeadline deadline, const WaitLimits* limits,
                       Cases&... cases) {
  static_assert(sizeof...(Cases) >= 1, "spindle::Select needs at least one case");
  SelectCase raw[] = {cases.raw()...};
  const SelectOutcome outcome =
      SelectAmong(raw, static_cast<int>(sizeof...(Cases)), may_block, deadline, limits);
  if (outcome.index >= 0) {
    int i = 0;
    ((i++ == outcome.index ? cases.Finish(outcome.status) : void()), ...);
  }
  return {outcome.index, outcome.status};
}
}  // namespace internal

// Performs exactly one of `cases` (SendCase and ReceiveCase objects, on channels of any
// types): one that is ready now, chosen uniformly at random among the ready ones, or
// else the first to become ready. Waits as long as it takes; not interruptible. A case
// whose channel is closed is ready (kClosed). Nothing stays registered on the channels
// of the cases that did not happen. Allocates nothing for up to 8 cases.
template <class... Cases>
SelectResult Select(Cases... cases) {
  return internal::RunSelect(true, internal::MonotonicDeadline::None(), nullptr, cases...);
}

// Select() that never waits: index -1 with kWouldBlock if no case is ready (a
// `default:` in Go).
template <class... Cases>
SelectResult TrySelect(Cases... cases) {
  return internal::RunSelect(false, internal::MonotonicDeadline::None(), nullptr, cases...);
}

// Select() that gives up at `deadline` (index -1, kTimedOut) or when the caller's
// execution context is cancelled (kCancelled) or reaches its own deadline.
template <class... Cases>
SelectResult SelectUntil(std::chrono::steady_clock::time_point deadline, Cases... cases) {
  return internal::RunSelect(true, internal::MonotonicDeadline::At(deadline),
                             internal::CurrentWaitLimits(), cases...);
}

// SelectUntil() with the deadline `timeout` from now.
template <class Rep, class Period, class... Cases>
SelectResult SelectFor(std::chrono::duration<Rep, Period> timeout, Cases... cases) {
  return internal::RunSelect(true, internal::DeadlineAfter(timeout),
                             internal::CurrentWaitLimits(), cases...);
}

}  // namespace spindle

#endif  // SPINDLE_SYNC_CHANNEL_H_
