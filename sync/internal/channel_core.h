// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_SYNC_INTERNAL_CHANNEL_CORE_H_
#define SPINDLE_SYNC_INTERNAL_CHANNEL_CORE_H_

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <new>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/deadline.h"
#include "fiber/internal/spinlock.h"
#include "fiber/internal/wait_types.h"

namespace spindle::internal {

// How a channel operation ended (the public spelling is spindle::ChannelStatus).
enum class ChannelStatus : std::uint8_t {
  kOk,          // the value was sent, or received
  kClosed,      // a send found the channel closed; a receive found it closed and drained
  kWouldBlock,  // a non-blocking form found nothing ready
  kTimedOut,    // the deadline (the call's, or its execution context's) came first
  kCancelled,   // the caller's execution context was cancelled
};

// What a channel knows of its element type, so that the core below is compiled once:
// its size and alignment, how to move a value and how to destroy one. Moves must not
// throw: they run under the channel's lock.
struct ChannelElementOps {
  std::size_t size;
  std::size_t align;
  // Move-constructs a value at `to` from the one at `from`, which stays alive
  // (moved-from) for its owner to destroy.
  void (*move_to)(void* from, void* to) noexcept;
  void (*destroy)(void* value) noexcept;
  // A trivially copyable type: moved by copying its bytes, destroyed by nothing (no call
  // through move_to and destroy on the hot path).
  bool trivial;
};

template <class T>
struct ChannelOpsFor {
  static void MoveTo(void* from, void* to) noexcept {
    ::new (to) T(static_cast<T&&>(*static_cast<T*>(from)));
  }
  static void Destroy(void* value) noexcept { static_cast<T*>(value)->~T(); }
  static constexpr ChannelElementOps kOps{sizeof(T), alignof(T), &MoveTo, &Destroy,
                                          std::is_trivially_copyable_v<T>};
};

// A blocked operation's entry in a channel's list of senders or receivers, on the
// waiter's stack: channel_core.cc defines it (it holds the waiter's TimedWaiter, an
// engine type that a public header must not bring in).
struct ChannelWaiter;
class FiberEntity;  // fiber_entity.h

// A FIFO of blocked operations; guarded by the channel's lock.
struct ChannelWaiterList {
  ChannelWaiter* head = nullptr;
  ChannelWaiter* tail = nullptr;
};

class ChannelCore;

// One case of a Select: a send of the value at `slot` or a receive into the storage at
// `slot` (a T's size and alignment, unconstructed), on `channel`; a null channel is a
// case that is never ready (as a nil channel in Go's select).
struct SelectCase {
  ChannelCore* channel;
  void* slot;
  bool send;
};

// What a Select did: the case that happened (its index in the cases given) and how it
// ended (kOk, or kClosed), or index -1 with kWouldBlock, kTimedOut or kCancelled.
struct SelectOutcome {
  int index;
  ChannelStatus status;
};

// The engine of spindle::Channel<T>, for any element type: a ring of `capacity` values
// and the lists of blocked senders and receivers, under one Spinlock.
//
// Protocol (why no value is lost or delivered twice, and no wake-up is lost):
//   - Every operation looks and acts under the lock: a receive takes the ring's oldest
//     value (and moves the oldest blocked sender's value into the freed place) or a
//     blocked sender's value (capacity 0); a send gives its value to the oldest blocked
//     receiver or puts it in the ring. An operation that can do neither links an entry
//     for itself in the list of its side, releases the lock and parks; the next
//     operation of the other side finds it under the lock.
//   - The party that finds a blocked entry claims it first: TimedWaiter::Notify(), the
//     one compare-and-swap that decides the waiter's outcome against its deadline, its
//     cancellation and (for a Select) its other cases. Only a won claim moves a value;
//     a lost one skips the entry (its waiter is leaving: it timed out, was cancelled or
//     another of its cases won) and tries the next.
//   - The claimer moves the value and writes the outcome after the claim, under the
//     lock; the woken waiter takes the lock (each of its channels' locks, for a Select)
//     before it reads them or returns, so it sees the finished move, and a waiter that
//     timed out unlinks its entries under those locks, so no claimer can touch its
//     stack afterwards.
//   - Close() claims every blocked entry with kClosed. A closed channel's receivers
//     still drain the ring.
// The fiber an operation wakes is queued after the lock is released (Close()'s, by a
// ReadyBatch).
// Thread-safe; not copyable.
class ChannelCore {
 public:
  // `capacity` 0 is a rendezvous. Stops the process with a message if `capacity` is
  // over kMaxChannelCapacity.
  ChannelCore(std::size_t capacity, const ChannelElementOps& ops);
  // Destroys the values still in the ring. Stops the process with a message if a fiber
  // or thread is blocked on the channel.
  ~ChannelCore();
  ChannelCore(const ChannelCore&) = delete;
  ChannelCore& operator=(const ChannelCore&) = delete;

  // Sends the value at `value` (moved from only on kOk). Blocks while the channel is
  // full unless `may_block` is false (kWouldBlock), until `deadline`, or while
  // `limits` (an interruptible wait's) allow.
  ChannelStatus Send(void* value, bool may_block, MonotonicDeadline deadline,
                     const WaitLimits* limits) {
    return Operate(true, value, may_block, deadline, limits);
  }
  // Receives into the unconstructed storage `out` (constructed only on kOk).
  ChannelStatus Receive(void* out, bool may_block, MonotonicDeadline deadline,
                        const WaitLimits* limits) {
    return Operate(false, out, may_block, deadline, limits);
  }
  // Closes the channel and wakes every blocked operation; true for the call that
  // closed it, false if it was closed already.
  bool Close();

  bool closed() const;
  std::size_t size() const;
  std::size_t capacity() const { return capacity_; }

 private:
  friend SelectOutcome SelectAmong(SelectCase* cases, int n, bool may_block,
                                   MonotonicDeadline deadline, const WaitLimits* limits);

  // The two halves of every operation, under lock_: true if the operation happened
  // (its status in `*status`), false if it would have to wait. A parked fiber whose
  // blocked operation it completed comes back in `*wake`, for the caller to queue
  // (QueueReadyFiber) once it has released the lock.
  bool TrySendLocked(void* value, ChannelStatus* status, FiberEntity** wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  bool TryReceiveLocked(void* out, ChannelStatus* status, FiberEntity** wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  // TrySendLocked() (`send`) or TryReceiveLocked() of the value or storage at `slot`.
  bool TryLocked(bool send, void* slot, ChannelStatus* status, FiberEntity** wake)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    return send ? TrySendLocked(slot, status, wake) : TryReceiveLocked(slot, status, wake);
  }
  // Where the blocked operations of a side wait: senders (`send`) or receivers.
  ChannelWaiterList& WaitersOf(bool send) ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    return send ? senders_ : receivers_;
  }
  // Send() (`send`) or Receive(): tries under the lock; else, with `may_block`, links
  // an entry for itself on its side's list and parks until claimed, the deadline or the
  // cancellation.
  ChannelStatus Operate(bool send, void* slot, bool may_block, MonotonicDeadline deadline,
                        const WaitLimits* limits);
  // A Select's locking: `n` distinct channels, in address order (and back). The
  // analysis cannot follow a lock per array element.
  static void LockAll(ChannelCore* const* channels, int n) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  static void UnlockAll(ChannelCore* const* channels, int n) ABSL_NO_THREAD_SAFETY_ANALYSIS;
  // The ring's index-th value from the oldest, index < capacity_. No division: head_ <
  // capacity_, so one wrap at most.
  void* SlotAt(std::size_t index) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    std::size_t i = head_ + index;
    if (i >= capacity_) i -= capacity_;
    return storage_ + i * ops_.size;
  }
  // ops_.move_to() and ops_.destroy(), without the calls for a trivial type.
  void MoveValue(void* from, void* to) const {
    if (!ops_.trivial) {
      ops_.move_to(from, to);
    } else if (ops_.size == sizeof(std::uint64_t)) {
      std::memcpy(to, from, sizeof(std::uint64_t));  // the common case, one load and store
    } else {
      std::memcpy(to, from, ops_.size);
    }
  }
  void DestroyValue(void* value) const {
    if (!ops_.trivial) ops_.destroy(value);
  }

  mutable Spinlock lock_;
  const ChannelElementOps ops_;
  const std::size_t capacity_;
  unsigned char* const storage_;  // capacity_ values' room, or null for a rendezvous
  std::size_t head_ ABSL_GUARDED_BY(lock_) = 0;   // the oldest value's index
  std::size_t count_ ABSL_GUARDED_BY(lock_) = 0;  // values in the ring
  bool closed_ ABSL_GUARDED_BY(lock_) = false;
  ChannelWaiterList senders_ ABSL_GUARDED_BY(lock_);
  ChannelWaiterList receivers_ ABSL_GUARDED_BY(lock_);
};

// The largest capacity a channel may have.
inline constexpr std::size_t kMaxChannelCapacity = std::size_t{1} << 30;
// The most cases one Select may have.
inline constexpr int kMaxSelectCases = 1024;
// The longest pause a contended channel lock's taker backs off for, in pause
// instructions (it doubles from 1 up to this; then it waits as any Spinlock).
inline constexpr int kMaxBackoffPauses = 512;

// Performs exactly one of the `n` cases: one that is ready now, chosen at random among
// the ready ones, or else (with `may_block`) the first that becomes ready, before
// `deadline` and while `limits` (an interruptible wait's) allow. Stops the process with
// a message if `n` is outside [1, kMaxSelectCases].
SelectOutcome SelectAmong(SelectCase* cases, int n, bool may_block,
                          MonotonicDeadline deadline, const WaitLimits* limits);

}  // namespace spindle::internal

#endif  // SPINDLE_SYNC_INTERNAL_CHANNEL_CORE_H_
