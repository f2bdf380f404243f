// Copyright 2026 The Spindle Authors.
//
// Models of TimedWaiter's plain-thread path (timed_waiter.cc, the real source built
// against Relacy: atomic.h): a waiter's park, with or without a deadline, against
// Notify() from other threads, and the deadline's own flip when it passes. Exactly one
// flip wins: the waiter returns kNotified exactly when one Notify() returned true, and
// a lost Notify() leaves the waiter parked forever (Relacy: deadlock).
//
// The fiber path (a parked fiber, woken through its scheduler lock, with a TimerWorker
// timer for the deadline) is not modelled here: it needs a fiber's control block and
// the scheduler's park hand-off (ParkFiber), which have no model build. The functions
// of that path are defined below and must not be reached.

#include <chrono>

#include "fiber/internal/atomic.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/model_testing.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "runtime/internal/group/ready_batch.h"
#include "sync/internal/timed_waiter.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// The fiber path's calls, which a plain thread's wait never makes.
FiberEntity* GetCurrentFiberEntity() { return nullptr; }  // every model thread is plain
void FiberEntity::SetState(FiberState) { LOG(FATAL) << "no fibers in a TimedWaiter model"; }
void ParkFiber(FiberEntity*, std::unique_lock<Spinlock>) {
  LOG(FATAL) << "no fibers in a TimedWaiter model";
}
void QueueReadyFiber(FiberEntity*) { LOG(FATAL) << "no fibers in a TimedWaiter model"; }
TimerEntry* NewTimerEntry() { LOG(FATAL) << "no fibers in a TimedWaiter model"; }
void ReleaseTimerEntry(TimerEntry*) { LOG(FATAL) << "no fibers in a TimedWaiter model"; }
TimerWorker* TimerWorkerFor(const SchedulingGroup*) {
  LOG(FATAL) << "no fibers in a TimedWaiter model";
}
void TimerWorker::Add(TimerEntry*) { LOG(FATAL) << "no fibers in a TimedWaiter model"; }

namespace {

using testing::ExpectModelHolds;

TimerClock::time_point ModelTimeIn(std::int64_t ns) {
  return TimerClock::time_point(std::chrono::nanoseconds(ModelClockNs() + ns));
}

// A waiter with a deadline against one Notify(): it is notified (and the Notify() says
// so) or it times out (and the Notify() says it came too late), never both or neither.
struct NotifyAgainstTimedWait : rl::test_suite<NotifyAgainstTimedWait, 2> {
  TimedWaiter waiter;
  TimedWaiter::Result result = TimedWaiter::Result::kTimedOut;
  bool notify_won = false;

  void thread(unsigned index) {
    if (index == 0) {
      result = waiter.WaitUntil(ModelTimeIn(1000));
    } else {
      notify_won = waiter.Notify();
    }
  }
  void after() { RL_ASSERT((result == TimedWaiter::Result::kNotified) == notify_won); }
};

// No deadline, two notifiers: the waiter is notified, by exactly one of them.
struct TwoNotifiesAgainstWait : rl::test_suite<TwoNotifiesAgainstWait, 3> {
  TimedWaiter waiter;
  TimedWaiter::Result result = TimedWaiter::Result::kTimedOut;
  int notifies_won = 0;

  void thread(unsigned index) {
    if (index == 0) {
      result = waiter.WaitUntil(TimerClock::time_point::max());
    } else {
      notifies_won += waiter.Notify() ? 1 : 0;
    }
  }
  void after() {
    RL_ASSERT(result == TimedWaiter::Result::kNotified);
    RL_ASSERT(notifies_won == 1);
  }
};

TEST(TimedWaiterModelTest, NotifyAgainstTimedWait) {
  ExpectModelHolds<NotifyAgainstTimedWait>(50000);
}
TEST(TimedWaiterModelTest, TwoNotifiesAgainstWait) {
  ExpectModelHolds<TwoNotifiesAgainstWait>(50000);
}

}  // namespace
}  // namespace spindle::internal
