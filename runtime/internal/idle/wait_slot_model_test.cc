// Copyright 2026 The Spindle Authors.
//
// Models of WaitSlot (wait_slot.h, the real header built against Relacy: atomic.h):
// a Wake() races the owner's Wait(), timed Wait(), WaitPolling() in a poller, and
// WakeForever(). Each model ends only if every wake-up is delivered exactly once: a
// lost one leaves the owner parked forever (Relacy: deadlock), a doubled one lets it
// return once too often (the counts in after()).

#include <climits>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "gtest/gtest.h"
#include "runtime/internal/idle/group_poller.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/idle/wait_slot.h"

namespace spindle::internal {
namespace {

using testing::ExpectModelHolds;

// The reactor as the slot sees it: Interrupt() is an eventfd write that persists until
// the holder's Wait() reads it (a counter it exchanges to 0), and Wait() parks on that
// counter while it is 0. No descriptors: Wait() reports no events.
class ModelPoller final : public GroupPoller {
 public:
  bool HasInterest() const override { return true; }
  bool Wait(MonotonicDeadline deadline, std::size_t /*max_events*/) override {
    // acquire: pairs with Interrupt()'s release (the eventfd's kernel ordering).
    while (eventfd_.word().exchange(0, std::memory_order_acquire) == 0) {
      if (!eventfd_.ParkWhile(0, deadline)) return false;
    }
    return false;
  }
  void Dispatch() override {}
  void Interrupt() override {
    eventfd_.word().fetch_add(1, std::memory_order_release);  // release: see Wait()
    eventfd_.Unpark();
  }
  Counters counters() const override { return {}; }

 private:
  Parker eventfd_;
};

// Two wake-ups for two waits, from another thread: both waits return.
struct WakeAgainstWait : rl::test_suite<WakeAgainstWait, 2> {
  WaitSlot slot;
  int returned = 0;
  void thread(unsigned index) {
    if (index == 0) {
      for (int i = 0; i < 2; ++i) returned += slot.Wait() ? 1 : 0;
    } else {
      slot.Wake();
      slot.Wake();
    }
  }
  void after() { RL_ASSERT(returned == 2); }
};

// A timed wait that may time out: a Wake() is either consumed by it (true) or kept for
// the next wait (false), never both and never neither.
struct WakeAgainstTimedWait : rl::test_suite<WakeAgainstTimedWait, 2> {
  WaitSlot slot;
  int consumed = 0;
  void thread(unsigned index) {
    if (index == 0) {
      if (slot.Wait(MonotonicDeadline::AtNs(ModelClockNs() + 1000))) {
        ++consumed;
      } else {
        consumed += slot.Wait() ? 1 : 0;  // the wake-up must still be there
      }
      // Nothing more is banked: a wait that expires at once consumes nothing.
      RL_ASSERT(!slot.Wait(MonotonicDeadline::Expired()));
    } else {
      slot.Wake();
    }
  }
  void after() { RL_ASSERT(consumed == 1); }
};

// The owner sleeps in the poller, then on the futex; the waker wakes twice. A Wake()
// that finds the owner in the poller interrupts it (else the owner would sleep there
// forever); one that comes after the owner left it wakes the futex.
struct WakeAgainstWaitPolling : rl::test_suite<WakeAgainstWaitPolling, 2> {
  ModelPoller poller;
  WaitSlot slot;
  int returned = 0;
  void thread(unsigned index) {
    if (index == 0) {
      slot.WaitPolling(&poller, MonotonicDeadline::None());
      returned += slot.Wait() ? 1 : 0;
    } else {
      slot.Wake();
      slot.Wake();
    }
  }
  // WaitPolling() returns when interrupted or when the first Wake() was banked before
  // it; the futex wait then needs the second one.
  void after() { RL_ASSERT(returned == 1); }
};

// Shutdown: WakeForever() makes the owner's present and future waits return, in the
// poller or on the futex.
struct WakeForeverAgainstWaits : rl::test_suite<WakeForeverAgainstWaits, 2> {
  ModelPoller poller;
  WaitSlot slot;
  void thread(unsigned index) {
    if (index == 0) {
      slot.WaitPolling(&poller, MonotonicDeadline::None());
      for (int i = 0; i < 3; ++i) RL_ASSERT(slot.Wait());
    } else {
      slot.WakeForever();
    }
  }
};

TEST(WaitSlotModelTest, WakeAgainstWait) { ExpectModelHolds<WakeAgainstWait>(20000); }
TEST(WaitSlotModelTest, WakeAgainstTimedWait) { ExpectModelHolds<WakeAgainstTimedWait>(20000); }
TEST(WaitSlotModelTest, WakeAgainstWaitPolling) {
  ExpectModelHolds<WakeAgainstWaitPolling>(20000);
}
TEST(WaitSlotModelTest, WakeForeverAgainstWaits) {
  ExpectModelHolds<WakeForeverAgainstWaits>(20000);
}

}  // namespace
}  // namespace spindle::internal
