// Copyright 2026 The Spindle Authors.
//
// Slow paths of Mutex: Go's sync.Mutex protocol (normal mode with barging and brief
// spinning, hand-off mode after 1 ms of starvation), on Spindle's wait queue.
//
// Why not strict FIFO hand-off? There unlock() gives the lock to the oldest waiter,
// which then has to be scheduled before anybody can enter, so every contended lock
// costs a fiber switch and a run-queue round trip. With barging, the running fiber
// keeps going; hand-off is kept for waiters that would otherwise starve.
//
// Lock (LockSlow):
//   1. While another holds the lock in normal mode, spin a few rounds. A spinner with
//      waiters queued claims `woken` so that the unlock it is waiting for does not wake
//      a waiter it will beat anyway.
//   2. Free in normal mode: CAS in `locked` (dropping our `woken` claim).
//   3. Otherwise take lock_, re-check (2), add one to the waiter count (dropping our
//      claim, setting `starving` if we have waited over 1 ms and the lock is held), and
//      wait in waiters_: at the tail the first time, at the head after losing a race.
//   4. Woken with the hand-off tag: the unlocker left `locked` clear and `starving` set,
//      so nobody else can have taken it; set `locked` (and leave hand-off mode if we
//      waited under 1 ms or nobody is left). Woken plainly: we hold the `woken` claim;
//      go back to 1.
// Unlock (UnlockSlow, when the fast CAS from exactly `locked` fails), one CAS that
// releases `locked` and decides:
//   Normal mode: if there are waiters and nobody holds the `woken` claim, claim it in
//   the same CAS and wake the oldest waiter to compete. Hand-off mode: wake the oldest
//   waiter with the hand-off tag; if none can take it, leave hand-off mode.
//
// No lost wake-up: the waiter count changes only under lock_, in the same critical
// section that links or unlinks the waiter, and every unlocker that sees a non-zero
// count without a `woken` claim or a holder takes lock_ to wake one. A waiter counted
// by a CAS that the unlocker's releasing CAS raced with is seen either by that CAS (which
// then finds the lock free and takes it, step 3's re-check) or by the unlocker (which
// then finds it linked, because linking happens before lock_ is released). A `woken`
// claim is dropped only by its holder when it takes the lock (whose unlock then wakes
// the next) or queues again (while someone holds the lock, whose unlock wakes).
// Each node popped from waiters_ is uncounted by whoever popped it: the unlocker, or
// the waiter itself when it timed out while still linked.
//
// Lifetime: the slow unlock keeps working on the mutex after it has released kLocked,
// and a timed waiter can leave without it. So another thread may lock, unlock and
// destroy the mutex while an unlocker is still inside (found in review; legal use of a
// std::mutex). An unlock that will wake somebody therefore counts itself in unlockers_
// before releasing kLocked and out after its last access; anyone who acquires the lock
// afterwards acquires that count with it, and the destructor waits for it to drop to
// 0. An unlock that wakes nobody touches nothing after its releasing CAS.

#include "sync/mutex.h"

#include <chrono>
#include <cstddef>
#include <cstdint>

#include "fiber/internal/debug_info.h"
#include "glog/logging.h"
#include "runtime/internal/base/ready_batch.h"

namespace spindle {
namespace {

constexpr int kSpinRounds = 4;
constexpr int kPausesPerRound = 30;
constexpr auto kStarvationThreshold = std::chrono::milliseconds(1);
constexpr std::uintptr_t kHandOffTag = 1;

}  // namespace

bool Mutex::LockSlow(std::chrono::steady_clock::time_point deadline,
                     const internal::WaitLimits* limits) {
  const auto until = internal::MonotonicDeadline::At(deadline);  // the API's edge
  bool awoke = false;     // we hold the `woken` claim
  bool starving = false;  // we have waited longer than kStarvationThreshold
  bool waited = false;
  std::chrono::steady_clock::time_point wait_start;
  int spins = 0;
  // relaxed: every decision below is made by a CAS that re-reads the word.
  std::uint32_t state = state_.load(std::memory_order_relaxed);
  for (;;) {
    if ((state & (kLocked | kStarving)) == kLocked && spins < kSpinRounds) {  // step 1
      if (!awoke && (state & kWoken) == 0 && (state >> kWaiterShift) != 0 &&
          state_.compare_exchange_weak(state, state | kWoken, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        awoke = true;
      }
      for (int i = 0; i < kPausesPerRound; ++i) internal::CpuRelax();
      ++spins;
      state = state_.load(std::memory_order_relaxed);
      continue;
    }
    if ((state & (kLocked | kStarving)) == 0) {  // step 2
      // acquire: pairs with the releasing CAS in unlock() or UnlockSlow().
      if (state_.compare_exchange_weak(state, (state | kLocked) & ~(awoke ? kWoken : 0),
                                       std::memory_order_acquire,
                                       std::memory_order_relaxed)) {
        return true;
      }
      continue;
    }
    internal::UniqueSpinlockGuard guard(lock_);  // step 3
    state = state_.load(std::memory_order_relaxed);
    for (;;) {
      if ((state & (kLocked | kStarving)) == 0) {
        // acquire: as in step 2.
        if (state_.compare_exchange_weak(state, (state | kLocked) & ~(awoke ? kWoken : 0),
                                         std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return true;
        }
        continue;
      }
      std::uint32_t desired = (state + kOneWaiter) & ~(awoke ? kWoken : 0);
      if (starving && (state & kLocked) != 0) desired |= kStarving;
      // relaxed: the count is published to unlockers by lock_, which they take to wake.
      if (state_.compare_exchange_weak(state, desired, std::memory_order_relaxed,
                                       std::memory_order_relaxed)) {
        break;
      }
    }
    awoke = false;
    internal::WaitQueue::WaitDetail detail;
    detail.front = waited;
    if (!waited) {
      waited = true;
      wait_start = std::chrono::steady_clock::now();
    }
    if (waiters_.Wait(guard.unique(), until, detail, internal::WaitKind::kMutex, limits,
                      this) !=
        internal::WaitResult::kNotified) {
      // relaxed: under lock_, like every change of the count.
      if (detail.removed_self) state_.fetch_sub(kOneWaiter, std::memory_order_relaxed);
      return false;
    }
    guard.unlock();
    starving = starving || std::chrono::steady_clock::now() - wait_start > kStarvationThreshold;
    state = state_.load(std::memory_order_relaxed);
    if (detail.tag == kHandOffTag) {  // step 4: the lock is ours
      for (;;) {
        std::uint32_t desired = state | kLocked;
        if (!starving || (state >> kWaiterShift) == 0) desired &= ~kStarving;
        // acquire: pairs with the releasing CAS of the unlock that handed it over.
        if (state_.compare_exchange_weak(state, desired, std::memory_order_acquire,
                                         std::memory_order_relaxed)) {
          return true;
        }
      }
    }
    awoke = true;  // woken to compete: the unlocker set `woken` for us
    spins = 0;
  }
}

Mutex::~Mutex() {
  // acquire: pairs with the release decrement in UnlockSlow(); nothing of an unlocker
  // touches the object after it.
  while (unlockers_.load(std::memory_order_acquire) != 0) internal::CpuRelax();
}

void Mutex::UnlockSlow(std::uint32_t state) {
  // Release kLocked and, in the same CAS, decide whether we wake a waiter: in normal
  // mode by claiming `woken` (if there are waiters and nobody holds the claim), in
  // hand-off mode always. Only an unlock that wakes touches the mutex after releasing
  // it, so only that one pins it in unlockers_, before the release.
  bool pinned = false;
  bool hand_off = false;
  bool wake = false;
  for (;;) {
    CHECK(state & kLocked) << "spindle::Mutex::unlock() on a mutex that is not locked";
    const std::uint32_t released = state - kLocked;
    hand_off = (released & kStarving) != 0;
    wake = hand_off || ((released >> kWaiterShift) != 0 && (released & kWoken) == 0);
    if (wake && !pinned) {
      // relaxed: ordered before the release CAS below, which every later owner (and
      // so whoever destroys the mutex) acquires.
      unlockers_.fetch_add(1, std::memory_order_relaxed);
      pinned = true;
    }
    const std::uint32_t desired = wake && !hand_off ? released | kWoken : released;
    // release: pairs with the acquiring CAS of the next owner, or in hand-off mode with
    // the acquiring CAS by which the handed-to waiter sets kLocked.
    if (state_.compare_exchange_weak(state, desired, std::memory_order_release,
                                     std::memory_order_relaxed)) {
      break;
    }
  }
  if (wake) {
    internal::ReadyBatch batch;  // the woken fiber is queued after lock_ is released
    internal::SpinlockGuard guard(lock_);
    std::size_t popped = 0;
    const bool woke = waiters_.WakeOne(hand_off ? kHandOffTag : 0, &popped);
    // relaxed: under lock_ (the count), or our own claim / mode being dropped.
    if (popped != 0) state_.fetch_sub(popped * kOneWaiter, std::memory_order_relaxed);
    if (!woke) state_.fetch_and(~(hand_off ? kStarving : kWoken), std::memory_order_relaxed);
  }
  // release: our last access; pairs with the destructor's acquire load.
  if (pinned) unlockers_.fetch_sub(1, std::memory_order_release);
}

// Where a Mutex keeps its holder, for debuggers (fiber/internal/debug_info.h). Mutex is
// not standard-layout (private members): offsetof is conditionally supported, and GCC
// and Clang give the layout they use, which is what a debugger reads.
struct MutexDebugLayout {
  static std::uint64_t OwnerOffset() {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
    return offsetof(Mutex, owner_);
#pragma GCC diagnostic pop
  }
};

namespace {

// Static initialisation: written before main() in every program that links Mutex.
[[maybe_unused]] const bool g_owner_offset_published = [] {
  spindle_debug_info.mutex_owner_offset_plus_one = MutexDebugLayout::OwnerOffset() + 1;
  return true;
}();

}  // namespace

}  // namespace spindle
