// Copyright 2026 The Spindle Authors.
//
// The protocol is described in channel_core.h. In short: everything happens under the
// channel's lock (all of a Select's channels' locks, taken in address order); a blocked
// operation is claimed by TimedWaiter::Notify() before anything moves, and the claimed
// waiter retakes the lock(s) before it looks at its outcome.

#include "sync/internal/channel_core.h"

#include <algorithm>
#include <array>
#include <memory>
#include <mutex>
#include <optional>

#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"
#include "sync/internal/timed_waiter.h"

namespace spindle::internal {

// One blocking call's park and its outcome, shared by the entries of a Select's cases:
// the claim on `waiter` decides which case (if any) happened. `won` and `status` are
// written by the claimer, under the lock of the channel whose entry it claimed, after
// the claim; the waiter reads them after retaking that lock.
struct ChannelWait {
  TimedWaiter waiter;
  int won = -1;
  ChannelStatus status = ChannelStatus::kOk;
};

struct ChannelWaiter {
  ChannelWait* wait = nullptr;
  void* slot = nullptr;  // the sender's value, or the receiver's storage
  ChannelWaiter* prev = nullptr;
  ChannelWaiter* next = nullptr;
  int index = 0;  // the case number (0 for a plain send or receive)
  bool linked = false;
};

namespace {

// Takes a channel's lock, backing off exponentially while it is taken (TTAS with
// backoff): a channel's lock is the one lock that every sender and receiver of a busy
// channel takes, from every worker, and a waiter that retries at once takes the cache
// line away from the holder at each try. Backing off lets the holder run several
// operations in a row on a line it keeps; on chan_fanin at 2 workers it halved the time
// per value. After the backoff, the Spinlock's own wait (which yields its CPU).
void LockWithBackoff(Spinlock& lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock) {
#ifdef SPINDLE_MODEL_CHECK
  lock.lock();  // timing only: a model explores the lock's orders without it
#else
  if (lock.try_lock()) return;
  for (int pauses = 1; pauses <= kMaxBackoffPauses; pauses *= 2) {
    for (int i = 0; i < pauses; ++i) CpuRelax();
    if (lock.try_lock()) return;
  }
  lock.lock();
#endif
}

// A scope holding a channel's lock, taken by LockWithBackoff(). Owned by one scope of
// one thread.
class ABSL_SCOPED_LOCKABLE ChannelLockGuard {
 public:
  explicit ChannelLockGuard(Spinlock& lock) ABSL_EXCLUSIVE_LOCK_FUNCTION(lock) : lock_(lock) {
    LockWithBackoff(lock_);
  }
  ~ChannelLockGuard() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  ChannelLockGuard(const ChannelLockGuard&) = delete;
  ChannelLockGuard& operator=(const ChannelLockGuard&) = delete;

 private:
  Spinlock& lock_;
};

void Link(ChannelWaiterList& list, ChannelWaiter* w) {
  w->prev = list.tail;
  w->next = nullptr;
  (list.tail != nullptr ? list.tail->next : list.head) = w;
  list.tail = w;
  w->linked = true;
}

void Unlink(ChannelWaiterList& list, ChannelWaiter* w) {
  (w->prev != nullptr ? w->prev->next : list.head) = w->next;
  (w->next != nullptr ? w->next->prev : list.tail) = w->prev;
  w->linked = false;
}

ChannelWaiter* PopFront(ChannelWaiterList& list) {
  ChannelWaiter* w = list.head;
  if (w != nullptr) Unlink(list, w);
  return w;
}

// Pops entries until one is claimed (its waiter's Notify() won); null if none is left.
// A lost claim's entry is dropped: its waiter is leaving (deadline, cancellation, or
// another of its Select's cases) and unlinks nothing, since it is no longer linked.
// With `wake`, a claimed fiber that is parked comes back there to be queued once the
// channel's lock is released (TimedWaiter::NotifyDeferred: one queue push, into the
// waker's runnext where the strategy has one); without, it is queued at once (into the
// caller's ReadyBatch).
__attribute__((noinline)) ChannelWaiter* ClaimFirstWaiting(ChannelWaiterList& list,
                                                            FiberEntity** wake) {
  while (ChannelWaiter* w = PopFront(list)) {
    if (wake != nullptr ? w->wait->waiter.NotifyDeferred(wake) : w->wait->waiter.Notify()) {
      return w;
    }
  }
  return nullptr;
}

// Inline: most operations on a busy buffered channel find nobody waiting.
inline ChannelWaiter* ClaimFirst(ChannelWaiterList& list, FiberEntity** wake) {
  return list.head == nullptr ? nullptr : ClaimFirstWaiting(list, wake);
}

// The claimer's last word to a claimed waiter (under the channel's lock, after the move).
void Settle(ChannelWaiter* w, ChannelStatus status) {
  w->wait->won = w->index;
  w->wait->status = status;
}

ChannelStatus StatusOf(WaitResult result) {
  return result == WaitResult::kTimedOut ? ChannelStatus::kTimedOut : ChannelStatus::kCancelled;
}

}  // namespace

ChannelCore::ChannelCore(std::size_t capacity, const ChannelElementOps& ops)
    : ops_(ops),
      capacity_(capacity),
      storage_(capacity == 0 ? nullptr
                             : static_cast<unsigned char*>(::operator new(
                                   capacity * ops.size, std::align_val_t(ops.align)))) {
  CHECK_LE(capacity, kMaxChannelCapacity)
      << "spindle::Channel: capacity " << capacity << " is outside [0, "
      << kMaxChannelCapacity << "]";
}

ChannelCore::~ChannelCore() {
  // A receiver woken by the last operation may destroy the channel as soon as it
  // returns; the claimer touches nothing after it releases the lock, which we take once.
  ChannelLockGuard guard(lock_);
  CHECK(senders_.head == nullptr && receivers_.head == nullptr)
      << "a spindle::Channel was destroyed while fibers or threads were blocked on it";
  for (std::size_t i = 0; i < count_; ++i) DestroyValue(SlotAt(i));
  if (storage_ != nullptr) ::operator delete(storage_, std::align_val_t(ops_.align));
}

bool ChannelCore::TrySendLocked(void* value, ChannelStatus* status, FiberEntity** wake) {
  if (closed_) {
    *status = ChannelStatus::kClosed;
    return true;
  }
  // A receiver waits only while the ring is empty: hand the value over directly.
  if (ChannelWaiter* r = ClaimFirst(receivers_, wake)) {
    MoveValue(value, r->slot);
    Settle(r, ChannelStatus::kOk);
    *status = ChannelStatus::kOk;
    return true;
  }
  if (count_ < capacity_) {
    MoveValue(value, SlotAt(count_));
    ++count_;
    *status = ChannelStatus::kOk;
    return true;
  }
  return false;
}

bool ChannelCore::TryReceiveLocked(void* out, ChannelStatus* status, FiberEntity** wake) {
  if (count_ > 0) {
    void* oldest = SlotAt(0);
    MoveValue(oldest, out);
    DestroyValue(oldest);
    if (++head_ == capacity_) head_ = 0;
    --count_;
    // A sender waits only while the ring is full: its value takes the freed place, so
    // the values stay in the order they were sent.
    if (ChannelWaiter* s = ClaimFirst(senders_, wake)) {
      MoveValue(s->slot, SlotAt(count_));
      ++count_;
      Settle(s, ChannelStatus::kOk);
    }
    *status = ChannelStatus::kOk;
    return true;
  }
  if (ChannelWaiter* s = ClaimFirst(senders_, wake)) {  // a rendezvous
    MoveValue(s->slot, out);
    Settle(s, ChannelStatus::kOk);
    *status = ChannelStatus::kOk;
    return true;
  }
  if (closed_) {
    *status = ChannelStatus::kClosed;
    return true;
  }
  return false;
}

ChannelStatus ChannelCore::Operate(bool send, void* slot, bool may_block,
                                   MonotonicDeadline deadline, const WaitLimits* limits) {
  std::optional<ChannelWait> wait;  // built only to wait: most operations need none
  ChannelWaiter self;
  FiberEntity* wake = nullptr;  // a partner claimed here, queued after the lock is released
  ChannelStatus status = ChannelStatus::kOk;
  {
    ChannelLockGuard guard(lock_);
    if (!TryLocked(send, slot, &status, &wake)) {
      if (!may_block) return ChannelStatus::kWouldBlock;
      self.wait = &wait.emplace();
      self.slot = slot;
      Link(WaitersOf(send), &self);
    }
  }
  if (self.wait == nullptr) {
    if (wake != nullptr) QueueReadyFiber(wake);
    return status;
  }
  // Linked under the lock: a partner that takes it afterwards finds us, and claims us
  // through `wait.waiter`, which returns at once if that claim came before the park.
  const WaitResult result = wait->waiter.WaitUntil(deadline, WaitKind::kChannel, limits, this);
  ChannelLockGuard guard(lock_);  // the claimer's move and Settle() happened under it
  if (self.linked) Unlink(WaitersOf(send), &self);  // timed out or cancelled, unclaimed
  return result == WaitResult::kNotified ? wait->status : StatusOf(result);
}

bool ChannelCore::Close() {
  ReadyBatch batch;
  ChannelLockGuard guard(lock_);
  if (closed_) return false;
  closed_ = true;
  // Receivers wait only on an empty ring, so they learn the channel is drained; senders
  // learn their values were not sent.
  while (ChannelWaiter* r = ClaimFirst(receivers_, nullptr)) Settle(r, ChannelStatus::kClosed);
  while (ChannelWaiter* s = ClaimFirst(senders_, nullptr)) Settle(s, ChannelStatus::kClosed);
  return true;
}

bool ChannelCore::closed() const {
  ChannelLockGuard guard(lock_);
  return closed_;
}

std::size_t ChannelCore::size() const {
  ChannelLockGuard guard(lock_);
  return count_;
}

// ---- Select

void ChannelCore::LockAll(ChannelCore* const* channels, int n) {
  for (int i = 0; i < n; ++i) LockWithBackoff(channels[i]->lock_);
}

void ChannelCore::UnlockAll(ChannelCore* const* channels, int n) {
  for (int i = n; i-- > 0;) channels[i]->lock_.unlock();
}

namespace {

// A per-thread xorshift generator for the order in which a Select polls its cases.
std::uint32_t NextRandom() {
  thread_local std::uint64_t state = 0;
  if (state == 0) {
    state = reinterpret_cast<std::uintptr_t>(&state) * 0x9E3779B97F4A7C15ull | 1;
  }
  state ^= state << 13;
  state ^= state >> 7;
  state ^= state << 17;
  return static_cast<std::uint32_t>(state >> 32);
}

// A uniform index below `n` (Lemire's multiply-shift; the slight bias is irrelevant for
// n <= kMaxSelectCases).
int RandomBelow(int n) {
  return static_cast<int>((std::uint64_t{NextRandom()} * static_cast<std::uint32_t>(n)) >> 32);
}

// A Select's scratch: the poll order, the distinct channels in lock order, and one
// waiter entry per case. On the stack up to kInline cases; on the heap beyond.
class SelectScratch {
 public:
  static constexpr int kInline = 8;

  explicit SelectScratch(int n) {
    if (n > kInline) {
      heap_order_ = std::make_unique<int[]>(n);
      heap_locks_ = std::make_unique<ChannelCore*[]>(n);
      heap_entries_ = std::make_unique<ChannelWaiter[]>(n);
    }
  }
  int* order() { return heap_order_ ? heap_order_.get() : inline_order_.data(); }
  ChannelCore** locks() { return heap_locks_ ? heap_locks_.get() : inline_locks_.data(); }
  ChannelWaiter* entries() {
    return heap_entries_ ? heap_entries_.get() : inline_entries_.data();
  }

 private:
  std::array<int, kInline> inline_order_;
  std::array<ChannelCore*, kInline> inline_locks_;
  std::array<ChannelWaiter, kInline> inline_entries_;
  std::unique_ptr<int[]> heap_order_;
  std::unique_ptr<ChannelCore*[]> heap_locks_;
  std::unique_ptr<ChannelWaiter[]> heap_entries_;
};

}  // namespace

// The channels' locks are taken in address order, each once, so two Selects (or a
// Select and a single operation) never wait for each other in a cycle.
SelectOutcome SelectAmong(SelectCase* cases, int n, bool may_block,
                          MonotonicDeadline deadline,
                          const WaitLimits* limits) ABSL_NO_THREAD_SAFETY_ANALYSIS {
  CHECK(n >= 1 && n <= kMaxSelectCases)
      << "spindle::Select: " << n << " cases is outside [1, " << kMaxSelectCases << "]";
  SelectScratch scratch(n);
  int* order = scratch.order();
  ChannelCore** locks = scratch.locks();
  int distinct = 0;
  for (int i = 0; i < n; ++i) {
    // A random permutation (Fisher-Yates, inside out), so no ready case starves another.
    const int j = RandomBelow(i + 1);
    order[i] = order[j];
    order[j] = i;
    if (cases[i].channel != nullptr) locks[distinct++] = cases[i].channel;
  }
  std::sort(locks, locks + distinct);
  distinct = static_cast<int>(std::unique(locks, locks + distinct) - locks);
  auto lock_all = [&] { ChannelCore::LockAll(locks, distinct); };
  auto unlock_all = [&] { ChannelCore::UnlockAll(locks, distinct); };
  CHECK(distinct > 0 || !may_block || !deadline.is_none() || limits != nullptr)
      << "spindle::Select: every case's channel is null and there is no deadline: it "
         "would wait forever";

  // Each case alone first, in the random order, under its own channel's lock: a ready
  // case is taken with one lock (nothing of this Select is registered anywhere yet, so
  // this is a plain try of each operation). Only when none is ready are all the locks
  // taken, to look again and register on every channel at once.
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    SelectCase& c = cases[i];
    if (c.channel == nullptr) continue;
    ChannelStatus status;
    FiberEntity* wake = nullptr;  // queued after the lock is released
    bool done;
    {
      ChannelLockGuard guard(c.channel->lock_);
      done = c.channel->TryLocked(c.send, c.slot, &status, &wake);
    }
    if (done) {
      if (wake != nullptr) QueueReadyFiber(wake);
      return {i, status};
    }
  }
  if (!may_block) return {-1, ChannelStatus::kWouldBlock};

  ChannelWait wait;
  ChannelWaiter* entries = scratch.entries();
  {
    lock_all();
    for (int k = 0; k < n; ++k) {
      const int i = order[k];
      SelectCase& c = cases[i];
      if (c.channel == nullptr) continue;
      ChannelStatus status;
      FiberEntity* wake = nullptr;  // queued after the locks are released
      if (c.channel->TryLocked(c.send, c.slot, &status, &wake)) {
        unlock_all();
        if (wake != nullptr) QueueReadyFiber(wake);
        return {i, status};
      }
    }
    for (int i = 0; i < n; ++i) {
      SelectCase& c = cases[i];
      if (c.channel == nullptr) continue;
      ChannelWaiter& e = entries[i];
      e.wait = &wait;
      e.slot = c.slot;
      e.index = i;
      Link(c.channel->WaitersOf(c.send), &e);
    }
    unlock_all();
  }
  // Every entry was linked under its channel's lock: the first operation to claim one
  // wins `wait` for its case; later claims (on the other channels) fail and pass on.
  const WaitResult result = wait.waiter.WaitUntil(deadline, WaitKind::kChannel, limits);
  lock_all();  // the winner's move and Settle() happened under its channel's lock
  for (int i = 0; i < n; ++i) {
    SelectCase& c = cases[i];
    if (c.channel != nullptr && entries[i].linked) {
      Unlink(c.channel->WaitersOf(c.send), &entries[i]);
    }
  }
  const SelectOutcome outcome = result == WaitResult::kNotified
                                    ? SelectOutcome{wait.won, wait.status}
                                    : SelectOutcome{-1, StatusOf(result)};
  unlock_all();
  return outcome;
}

}  // namespace spindle::internal
