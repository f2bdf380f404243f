// Copyright 2026 The Spindle Authors.

#include "io/internal/descriptor.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <mutex>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/os_mutex.h"
#include "glog/logging.h"
#include "io/internal/reactor.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/poller_host.h"
#include "sync/internal/timed_waiter.h"

namespace spindle::io::internal {

using spindle::internal::FiberEntity;
using spindle::internal::SpinlockGuard;
using spindle::internal::TimedWaiter;

// The records, in chunks that are allocated on demand and never freed (so a stale epoll
// tag always names readable memory), with a free list.
class DescriptorTable {
 public:
  static constexpr std::uint32_t kChunkBits = 12;  // 4096 records per chunk
  static constexpr std::uint32_t kMaxChunks = 4096;  // 16M descriptors

  static DescriptorTable& Get() {
    static DescriptorTable* table = new DescriptorTable;  // never destroyed
    return *table;
  }

  Descriptor* Allocate() {
    spindle::internal::OsMutexGuard lock(lock_);
    if (free_ == nullptr) Grow();
    Descriptor* record = free_;
    free_ = record->next_free_;
    record->next_free_ = nullptr;
    ++live_;
    return record;
  }

  void Free(Descriptor* record) {
    spindle::internal::OsMutexGuard lock(lock_);
    record->next_free_ = free_;
    free_ = record;
    --live_;
  }

  Descriptor* At(std::uint32_t index) {
    // acquire: pairs with Grow()'s release (a chunk fully built).
    Descriptor* chunk = chunks_[index >> kChunkBits].load(std::memory_order_acquire);
    CHECK(chunk != nullptr) << "an epoll tag names descriptor " << index
                            << ", which was never allocated";
    return &chunk[index & ((1u << kChunkBits) - 1)];
  }

  std::size_t live() {
    spindle::internal::OsMutexGuard lock(lock_);
    return live_;
  }

 private:
  void Grow() ABSL_EXCLUSIVE_LOCKS_REQUIRED(lock_) {
    CHECK_LT(chunk_count_, kMaxChunks) << "more than 16M open descriptors";
    auto* chunk = new Descriptor[std::size_t{1} << kChunkBits];
    const std::uint32_t base = chunk_count_ << kChunkBits;
    // Pushed in reverse so low indexes come out first.
    for (std::uint32_t i = (1u << kChunkBits); i-- > 0;) {
      chunk[i].index_ = base + i;
      chunk[i].next_free_ = free_;
      free_ = &chunk[i];
    }
    chunks_[chunk_count_++].store(chunk, std::memory_order_release);
  }

  spindle::internal::OsMutex lock_;
  Descriptor* free_ ABSL_GUARDED_BY(lock_) = nullptr;
  std::uint32_t chunk_count_ ABSL_GUARDED_BY(lock_) = 0;
  std::size_t live_ ABSL_GUARDED_BY(lock_) = 0;
  std::atomic<Descriptor*> chunks_[kMaxChunks] = {};
};

std::size_t LiveDescriptors() { return DescriptorTable::Get().live(); }

Descriptor* Descriptor::Create(int fd) {
  Descriptor* record = DescriptorTable::Get().Allocate();
  record->fd_ = fd;
  // relaxed: the record is not published yet; the release below publishes all of it.
  record->closed_.store(false, std::memory_order_relaxed);
  record->likely_blocked_[kRead] = record->likely_blocked_[kWrite] = false;
  record->hung_up_[kRead].store(false, std::memory_order_relaxed);  // relaxed: as closed_
  record->hung_up_[kWrite].store(false, std::memory_order_relaxed);
  {
    SpinlockGuard lock(record->lock_);
    record->ready_[kRead] = record->ready_[kWrite] = false;
  }
  // The owner reference, same generation as the record was recycled with. release:
  // pairs with Acquire()/generation()'s acquire.
  const std::uint64_t generation = record->state_.load(std::memory_order_relaxed) >> 32;
  record->state_.store((generation << 32) | 1, std::memory_order_release);
  return record;
}

Descriptor* Descriptor::FromTag(std::uint64_t tag, std::uint32_t* generation) {
  *generation = static_cast<std::uint32_t>(tag);
  return DescriptorTable::Get().At(static_cast<std::uint32_t>(tag >> 32));
}

bool Descriptor::Acquire(std::uint32_t generation) {
  // acquire: pairs with Create()'s release, and with the last Release() of the previous
  // use (so what it did is visible before we reuse the record).
  std::uint64_t state = state_.load(std::memory_order_acquire);
  for (;;) {
    if (static_cast<std::uint32_t>(state >> 32) != generation ||
        static_cast<std::uint32_t>(state) == 0) {
      return false;  // released (and maybe reused): the owner closed long ago
    }
    // seq_cst: with closed()'s seq_cst load after it, against Close()'s seq_cst
    // exchange of closed_ and load of the count (a store-buffering pair): either the
    // operation sees the close, or Close() sees the operation and shuts the socket
    // down to wake it.
    if (state_.compare_exchange_weak(state, state + 1, std::memory_order_seq_cst)) {
      return true;
    }
  }
}

void Descriptor::Release() {
  // acq_rel: the last releaser sees every other user's effects before it closes.
  const std::uint64_t previous = state_.fetch_sub(1, std::memory_order_acq_rel);
  DCHECK_NE(static_cast<std::uint32_t>(previous), 0u);
  if (static_cast<std::uint32_t>(previous) == 1) Recycle();
}

void Descriptor::Recycle() {
  // Nobody holds a reference, and none can be taken (Acquire needs one): only stale
  // reactor events may still look at us, and they fail Acquire.
  Reactor* reactor;
  {
    SpinlockGuard lock(lock_);
    reactor = reactor_;
    reactor_ = nullptr;
    DCHECK(waiter_[kRead] == nullptr && waiter_[kWrite] == nullptr &&
           waiter_[kNeither] == nullptr);
  }
  if (reactor != nullptr) reactor->Unregister(fd_);
  if (close(fd_) != 0 && errno != EINTR) PLOG(ERROR) << "close(" << fd_ << ")";
  fd_ = -1;
  // A new generation, no references. release: pairs with Acquire()'s acquire.
  const std::uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
  state_.store((generation & 0xffffffffu) << 32, std::memory_order_release);
  DescriptorTable::Get().Free(this);
}

void Descriptor::Close(std::uint32_t generation) {
  if (!Acquire(generation)) return;
  bool first = false;
  {
    // Fibers woken below are queued when this ends, after lock_ is released: queueing
    // may wait for room in a full run queue, which must not happen under a spinlock
    // that a worker (the reactor) may be spinning on.
    spindle::internal::ReadyBatch batch;
    SpinlockGuard lock(lock_);
    // seq_cst: see Acquire().
    if (!closed_.exchange(true, std::memory_order_seq_cst)) {
      first = true;
      for (TimedWaiter*& waiter : waiter_) {
        if (waiter != nullptr) {
          waiter->Notify();  // under lock_: the waiter cannot be gone (class comment)
          waiter = nullptr;
        }
      }
    }
  }
  if (first) {
    // Other operations in flight (more than the owner's reference and ours): a plain
    // thread among them may sit in poll(), which only a shutdown wakes. Without them
    // the last Release() below closes at once, keeping the socket's close semantics
    // (SO_LINGER, an abortive close) as the user set them. seq_cst: see Acquire().
    if (static_cast<std::uint32_t>(state_.load(std::memory_order_seq_cst)) > 2) {
      shutdown(fd_, SHUT_RDWR);
    }
    Release();  // the owner reference
  }
  Release();
}

void Descriptor::OnEvents(std::uint32_t generation, std::uint32_t epoll_events) {
  if (!Acquire(generation)) return;  // a stale event for a recycled record
  const bool readable = (epoll_events & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0;
  const bool writable = (epoll_events & (EPOLLOUT | EPOLLHUP | EPOLLERR)) != 0;
  // relaxed: hints for the operations, which the wake-up (or ready flag) this event
  // delivers under lock_ orders after them anyway.
  if ((epoll_events & (EPOLLRDHUP | EPOLLHUP | EPOLLERR)) != 0) {
    hung_up_[kRead].store(true, std::memory_order_relaxed);
  }
  if ((epoll_events & (EPOLLHUP | EPOLLERR)) != 0) {
    hung_up_[kWrite].store(true, std::memory_order_relaxed);
  }
  {
    // Fibers woken here are queued after lock_ is released (see Close()); under the
    // reactor's Dispatch() an outer batch collects the whole poll's fibers.
    spindle::internal::ReadyBatch batch;
    SpinlockGuard lock(lock_);
    for (int d : {kRead, kWrite}) {
      if (d == kRead ? !readable : !writable) continue;
      // Handed over (the edge is the waiter's), or kept for the next Wait(); also
      // kept if the waiter timed out just now (it may come back for it).
      if (waiter_[d] == nullptr || !waiter_[d]->Notify()) ready_[d] = true;
      waiter_[d] = nullptr;
    }
  }
  Release();
}

Descriptor::WaitResult Descriptor::Wait(Direction direction,
                                        spindle::internal::MonotonicDeadline deadline,
                                        int* error) {
  // Every wait is interruptible: the caller's execution context bounds it.
  const spindle::internal::WaitLimits* limits = spindle::internal::CurrentWaitLimits();
  if (limits != nullptr) deadline = std::min(deadline, limits->deadline);
  FiberEntity* self = spindle::internal::GetCurrentFiberEntity();
  if (self != nullptr && !self->is_master() && self->scheduling_group != nullptr) {
    return WaitAsFiber(direction, deadline, limits, error);
  }
  return WaitAsThread(direction, deadline, limits != nullptr ? limits->stop : nullptr);
}

int Descriptor::EnsureRegistered() {
  if (reactor_ != nullptr) {
    // Registered under an earlier runtime whose group of that index is gone (fewer
    // groups now): move to ours, or nobody would poll it. Else make sure the reactor is
    // attached to this runtime's group of its index.
    if (reactor_->index() < spindle::internal::PollerHostGroupCount()) {
      Reactor::ForGroup(reactor_->index());
      return 0;
    }
    reactor_->Unregister(fd_);
    reactor_ = nullptr;
  }
  Reactor* reactor = Reactor::ForGroup(spindle::internal::PollerHostCurrentGroup());
  const int error = reactor->Register(fd_, Tag());
  if (error != 0) {
    // EPERM: a file epoll cannot watch (a regular file); the caller's wait falls back
    // to poll(2) on its thread. Anything else (ENOSPC: fs.epoll.max_user_watches;
    // ENOMEM) is the caller's error: a poll(2) fallback would stall the worker for up
    // to the whole deadline.
    if (error != EPERM) {
      LOG_EVERY_N(WARNING, 1000) << "epoll_ctl(EPOLL_CTL_ADD, " << fd_
                                 << ") failed: errno " << error
                                 << "; the operation fails (logged every 1000th time)";
    }
    return error;
  }
  reactor_ = reactor;
  return 0;
}

Descriptor::WaitResult Descriptor::WaitAsFiber(
    Direction direction, spindle::internal::MonotonicDeadline deadline,
    const spindle::internal::WaitLimits* limits, int* error) {
  TimedWaiter waiter;
  bool pollable = true;
  std::size_t reactor_index = 0;
  {
    SpinlockGuard lock(lock_);
    if (closed_.load(std::memory_order_relaxed)) return WaitResult::kClosed;  // under lock_
    if (direction != kNeither) {
      if (!RegisteredWithLiveGroup()) {
        const int registered = EnsureRegistered();
        if (registered != 0 && registered != EPERM) {
          if (error != nullptr) *error = registered;
          return WaitResult::kFailed;
        }
      }
      pollable = reactor_ != nullptr;
      if (pollable) reactor_index = reactor_->index();
      if (pollable && ready_[direction]) {
        ready_[direction] = false;
        return WaitResult::kReady;
      }
    }
    if (pollable) waiter_[direction] = &waiter;
  }

  // Not pollable by epoll (EPERM, see EnsureRegistered()): block the worker in poll(2).
  if (!pollable) {
    return WaitAsThread(direction, deadline, limits != nullptr ? limits->stop : nullptr);
  }
  // Someone must poll while we wait (see BusyPoll::EnsurePollerAwake()).
  if (direction != kNeither) {
    spindle::internal::EnsurePollerAwake(reactor_index);
  }
  const TimedWaiter::Result result =
      waiter.WaitUntil(deadline, spindle::internal::WaitKind::kSocket, limits, this);
  {
    SpinlockGuard lock(lock_);
    // Still published only if nobody notified us (a time-out, a cancellation). A
    // readiness whose Notify() lost to either stays in ready_ (OnEvents()).
    if (waiter_[direction] == &waiter) waiter_[direction] = nullptr;
  }
  if (closed()) return WaitResult::kClosed;
  switch (result) {
    case TimedWaiter::Result::kTimedOut:
      return WaitResult::kTimedOut;
    case TimedWaiter::Result::kCancelled:
      return WaitResult::kCancelled;
    default:
      return WaitResult::kReady;
  }
}

namespace {

// A plain thread's wake-up for a cancellation while it sits in poll(2): an eventfd of
// its own (made on first use, kept for the thread's life) that the cancellation writes
// and the poll watches beside the socket.
int ThreadCancelFd() {
  thread_local const int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  return fd;
}

struct PollCancel : spindle::internal::StopState::Callback {
  int fd = -1;
  static void Run(spindle::internal::StopState::Callback* node) noexcept {
    eventfd_write(static_cast<PollCancel*>(node)->fd, 1);  // best effort: never full
  }
};

}  // namespace

Descriptor::WaitResult Descriptor::WaitAsThread(Direction direction,
                                                spindle::internal::MonotonicDeadline deadline,
                                                spindle::internal::StopState* stop) {
  if (stop == nullptr) return PollAsThread(direction, deadline, -1);
  PollCancel cancel;
  cancel.run = &PollCancel::Run;
  cancel.fd = ThreadCancelFd();
  if (cancel.fd < 0) {
    // No eventfd (a descriptor limit): cancellation is noticed at the deadline only.
    LOG_FIRST_N(WARNING, 1) << "eventfd() failed: errno " << errno
                            << "; a plain thread's socket waits are not interruptible";
    return PollAsThread(direction, deadline, -1);
  }
  if (!stop->Add(&cancel)) return WaitResult::kCancelled;  // cancelled already
  const WaitResult result = PollAsThread(direction, deadline, cancel.fd);
  stop->Remove(&cancel);  // no write to the eventfd after this
  eventfd_t drained;
  eventfd_read(cancel.fd, &drained);  // empty for the next wait (EAGAIN if it was)
  return result;
}

bool Descriptor::RegisteredWithLiveGroup() const {
  if (reactor_ == nullptr) return false;
  return spindle::internal::IsAttachedPoller(reactor_->index(), reactor_);
}

Descriptor::WaitResult Descriptor::PollAsThread(
    Direction direction, spindle::internal::MonotonicDeadline deadline, int cancel_fd) {
  pollfd entries[2] = {};
  pollfd& entry = entries[0];
  entry.fd = fd_;
  entry.events = direction == kRead    ? POLLIN | POLLRDHUP
                 : direction == kWrite ? POLLOUT
                                       : 0;  // kNeither: only hang-ups (Close) wake us
  entries[1].fd = cancel_fd;  // negative: ignored by poll(2)
  entries[1].events = POLLIN;
  for (;;) {
    if (closed()) return WaitResult::kClosed;
    int timeout_ms = -1;
    if (!deadline.is_none()) {
      const std::int64_t left_ns = deadline.ns() - spindle::internal::MonotonicNowNs();
      if (left_ns <= 0) return WaitResult::kTimedOut;
      const std::int64_t ms = (left_ns + 999'999) / 1'000'000;  // rounded up
      timeout_ms = ms > 1'000'000'000 ? 1'000'000'000 : static_cast<int>(ms);
    }
    const int n = poll(entries, cancel_fd >= 0 ? 2 : 1, timeout_ms);
    if (closed()) return WaitResult::kClosed;
    if (n > 0 && (entries[1].revents & POLLIN) != 0) return WaitResult::kCancelled;
    if (n > 0) {
      if (direction != kNeither) return WaitResult::kReady;
      // kNeither: a hang-up without Close() (the peer); keep backing off until the
      // deadline without spinning on it.
      if (deadline.is_none()) return WaitResult::kReady;
      std::this_thread::sleep_until(deadline.time_point());
      return WaitResult::kTimedOut;
    }
    if (n < 0 && errno != EINTR) {
      PLOG(ERROR) << "poll(" << fd_ << ")";
      return WaitResult::kReady;  // let the caller's system call report the error
    }
  }
}

}  // namespace spindle::io::internal
