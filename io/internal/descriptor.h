// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_IO_INTERNAL_DESCRIPTOR_H_
#define SPINDLE_IO_INTERNAL_DESCRIPTOR_H_

#include <atomic>
#include <chrono>
#include <cstdint>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/deadline.h"
#include "fiber/internal/local_storage.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {
class TimedWaiter;
}  // namespace spindle::internal

namespace spindle::io::internal {

class Reactor;

// One open file descriptor as the io layer sees it: the kernel's number, who waits for
// it in each direction, and how many operations use it. Records are type-stable: they
// live in a table that is never freed (DescriptorTable in descriptor.cc), and each use
// of a record carries a 32-bit generation, bumped when the record is recycled. The
// reactor's epoll data is (index, generation) (Tag()), so an event that arrives for a
// descriptor already closed, and maybe reused, finds a record whose generation differs
// and is dropped (Go's fdseq, brpc's versioned socket ids; the reference note's close
// races: Go #59545, libdill #129).
//
// References. The owner (a Stream or Listener) holds one from Create() until Close();
// each operation holds one while it runs (Acquire/Release). The descriptor is closed
// with close(2), and the record recycled, when the last reference goes: a Close()
// racing an operation can never let the kernel hand the same number to another
// connection under that operation.
//
// Waiting (Wait): per direction, a fiber waiter parks on a TimedWaiter published in
// `waiter_` under `lock_`; the reactor, finding an edge (OnEvents), hands it to the
// waiter or, if none waits, leaves `ready_` set for the next wait, which then returns
// at once (the operation retries its system call, which may just say EAGAIN again: an
// edge seen twice costs one system call, an edge missed would cost a hang). The
// sequence "system call says EAGAIN; Wait()" cannot lose an edge: one that arrives
// after the EAGAIN either finds our waiter or sets `ready_` before we look, both under
// `lock_`. A plain thread waits in poll(2) (level-triggered) instead.
//
// Closing (Close): under `lock_`, mark closed and wake both waiters (they return
// kClosed), then shutdown(2), which wakes plain threads in poll() and accept(). A
// waiter's TimedWaiter is only notified under `lock_`, and the waiter takes it out under
// `lock_` before it leaves: no notification reaches a waiter that is gone.
//
// Thread-safety: all members are safe from any thread, under the reference rules
// above (operations between Acquire and Release, or with the owner reference).
class Descriptor {
 public:
  enum Direction { kRead = 0, kWrite = 1, kNeither = 2 };
  // kFailed: the descriptor could not be registered with the reactor (epoll_ctl failed
  // with something else than EPERM: ENOSPC at fs.epoll.max_user_watches, ENOMEM); the
  // error is in Wait()'s `error`. Nothing was waited for. kCancelled: the caller's
  // execution context was cancelled (every wait is interruptible; its deadline, if
  // earlier, gives kTimedOut).
  enum class WaitResult { kReady, kClosed, kTimedOut, kFailed, kCancelled };

  // A record for `fd` (non-blocking already) holding the owner reference.
  static Descriptor* Create(int fd);
  // The record an epoll tag names, and the tag's generation.
  static Descriptor* FromTag(std::uint64_t tag, std::uint32_t* generation);

  // Takes an operation reference if `generation` is this record's current use (false
  // if it was released and maybe reused: the owner closed long ago).
  bool Acquire(std::uint32_t generation);
  void Release();

  std::uint32_t generation() const {
    // acquire: pairs with the release when the record was (re)issued.
    return static_cast<std::uint32_t>(state_.load(std::memory_order_acquire) >> 32);
  }
  std::uint64_t Tag() const {
    return (std::uint64_t{index_} << 32) | generation();
  }
  int fd() const { return fd_; }
  // Whether `generation` is still this record's use and it is not closed (a snapshot).
  bool IsOpen(std::uint32_t generation) const {
    return this->generation() == generation && !closed();
  }
  bool closed() const { return closed_.load(std::memory_order_seq_cst); }  // Acquire()

  // Waits (under a reference) until `direction` may be ready, the descriptor is closed,
  // or `deadline`. kNeither waits for closing or the deadline only (a back-off).
  // kFailed sets `*error` (an errno value) when `error` is not null.
  WaitResult Wait(Direction direction, spindle::internal::MonotonicDeadline deadline,
                  int* error = nullptr);

  // The owner's Close(), for the use `generation`: marks closed, wakes waiters,
  // shuts the socket down, drops the owner reference. Later calls do nothing.
  void Close(std::uint32_t generation);

  // The reactor, for events tagged with `generation`.
  void OnEvents(std::uint32_t generation, std::uint32_t epoll_events);

  // An operation (or a would-be second one) in `direction`: exactly one at a time.
  bool TryStartOperation(Direction direction) {
    // acquire: pairs with EndOperation's release (the previous operation's effects).
    return !busy_[direction].exchange(true, std::memory_order_acquire);
  }
  void EndOperation(Direction direction) {
    busy_[direction].store(false, std::memory_order_release);
  }
  // Set by an operation whose last system call in `direction` returned less than it
  // asked for (the socket buffer was drained or filled): the next operation waits for
  // an edge first instead of making a system call that would say EAGAIN. Only the one
  // operation of the direction uses it.
  // Not after a hang-up or error event: an edge that brought the last data and the
  // end of stream (or an error) together leaves the end for a later read, with no
  // edge of its own (nginx's pending_eof).
  bool& likely_blocked(Direction direction) { return likely_blocked_[direction]; }
  bool SkipBlockedGuess(Direction direction) const {
    return hung_up_[direction].load(std::memory_order_relaxed);  // relaxed: a hint
  }

  Descriptor() = default;
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

 private:
  friend class DescriptorTable;

  WaitResult WaitAsFiber(Direction direction, spindle::internal::MonotonicDeadline deadline,
                         const spindle::internal::WaitLimits* limits, int* error);
  WaitResult WaitAsThread(Direction direction, spindle::internal::MonotonicDeadline deadline,
                          spindle::internal::StopState* stop);
  WaitResult PollAsThread(Direction direction, spindle::internal::MonotonicDeadline deadline,
                          int cancel_fd);
  // Registers with the reactor of the calling fiber's group (once; again if that
  // reactor's group is gone). 0, or the errno value epoll_ctl failed with (then
  // reactor_ stays null).
  int EnsureRegistered() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  // Whether reactor_ is the poller of the running runtime's group of its index. From a
  // fiber (so a runtime runs).
  bool RegisteredWithLiveGroup() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_);
  void Recycle();

  // generation (high 32 bits) | references (low 32 bits).
  std::atomic<std::uint64_t> state_{0};
  std::uint32_t index_ = 0;
  int fd_ = -1;
  std::atomic<bool> closed_{false};
  std::atomic<bool> busy_[2] = {false, false};
  bool likely_blocked_[2] = {false, false};
  // Per direction: a hang-up or error event was seen (EPOLLRDHUP: reads; EPOLLHUP and
  // EPOLLERR: both).
  std::atomic<bool> hung_up_[2] = {false, false};

  spindle::internal::Spinlock lock_;
  bool ready_[2] ABSL_GUARDED_BY(lock_) = {false, false};
  spindle::internal::TimedWaiter* waiter_[3] ABSL_GUARDED_BY(lock_) = {nullptr, nullptr, nullptr};
  // Registered with (never changes back to null).
  Reactor* reactor_ ABSL_GUARDED_BY(lock_) = nullptr;
  // DescriptorTable's free list, under the table's lock (not this record's).
  Descriptor* next_free_ = nullptr;
};

// Live records (tests: no descriptor leaks).
std::size_t LiveDescriptors();

}  // namespace spindle::io::internal

#endif  // SPINDLE_IO_INTERNAL_DESCRIPTOR_H_
