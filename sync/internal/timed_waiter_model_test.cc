// Copyright 2026 The Spindle Authors.
//
// Models of TimedWaiter (timed_waiter.cc, the real source built against Relacy:
// atomic.h; a fiber's scheduler lock is Relacy's mutex through spinlock.h).
//
// The plain-thread path: a waiter's park, with or without a deadline, against Notify()
// from other threads, and the deadline's own flip when it passes. Exactly one flip wins:
// the waiter returns kNotified exactly when one Notify() returned true, and a lost
// Notify() leaves the waiter parked forever (Relacy: deadlock).
//
// The fiber path: a fiber's park (steps 1-3 of timed_waiter.cc) against Notify() and the
// deadline timer's callback (OnDeadline), each flipping under the fiber's scheduler lock
// and queueing the fiber if it is parked, and against the waiter's cancellation of its
// timer once it runs again. The scheduler and the TimerWorker are the model's, defined
// below by the contracts the fiber path relies on:
//   - ParkFiber() makes the fiber Waiting, releases its lock, and returns only once
//     QueueReadyFiber() queued it (a worker then makes it Running under the lock); the
//     model's wakers queue it at once, the earliest a waker can (the runtime's queue it
//     later: after unlocking, or through a timer round's ReadyBatch);
//   - the deadline is armed in the worker's TimerQueue (the real one, timer_queue.cc
//     built against Relacy), and the TimerWorker pops it and calls its callback at any
//     time after it was armed (a model has no reason to wait for the expiry), as a
//     firing round does; the waiter's TimerQueue::Remove() races that pop, and a waiter
//     that finds its node gone waits for the callback to be done with it (the firing
//     round itself is modelled in timer_worker_model_test).
// With a cancellation (the wait's StopState, stop_state.cc built against Relacy too), a
// canceller thread requests the stop at any time: before the waiter registers (the
// waiter flips itself), while it is registered (the callback flips on the canceller's
// thread), or after it left (nothing runs).
// The waiter lives on the heap and is deleted as soon as WaitUntil() returned and the
// waiter left the wait list (as WaitQueue's waiters leave theirs), so a notifier or a
// timer callback that touched its words afterwards (its state, the callback's "done"
// flag: every path that touches the waiter touches one of them) is an access to
// freed memory to Relacy. A
// fiber queued twice, or never though it parked, fails the model's checks; one parked
// for ever is a deadlock.

#include <chrono>
#include <cstdlib>

#include "fiber/internal/atomic.h"
#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/model_testing.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/ready_batch.h"
#include "sync/internal/stop_state.h"
#include "sync/internal/timed_waiter.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// ---- The model's scheduler and TimerWorker, as the fiber path sees them.

// One model run's fiber, its park and its timer. Plain fields are touched by one model
// thread at a time (a model's threads take turns; the words that order them are
// Relacy's).
struct ModelFiberScheduler {
  FiberEntity* fiber = nullptr;  // the model's one fiber: GetCurrentFiberEntity()
  Parker queued;                 // its word: how many times QueueReadyFiber() ran
  int parks = 0;
  // The timer thread's inbox: the word counts events (an arming, the waiter's end), and
  // the thread parks on it until one of the two below is set.
  Parker timer_events;
  TimerQueue queue;  // the fiber's worker's timer queue
  Atomic<bool> waiter_done{false};
  int timers_fired = 0;
};
ModelFiberScheduler* g_model = nullptr;  // set by a model's before()

FiberEntity* GetCurrentFiberEntity() { return g_model != nullptr ? g_model->fiber : nullptr; }
// The scheduling trace's waker id (never recorded here: no trace window opens).
std::uint64_t CurrentLockOwnerId() { return kLockOwnerThread; }

// FiberEntity's own (fiber_entity.cc, not linked: its layout there has the runtime's
// Spinlock), as far as a control block without a stack needs them.
FiberEntity::FiberEntity(std::uint64_t id, const Stack& stack, bool is_master)
    : id(id),
      reclaim(nullptr),
      state_(is_master ? FiberState::kRunning : FiberState::kReady),
      state_since_(0),
      is_master_(is_master),
      stack_(stack) {}
FiberEntity::~FiberEntity() = default;
// SetState() is inline (fiber_entity.h): its checks run in the model as they are; a
// failed one is a failed model, and no clock is read.
void FiberEntity::FailSetState(FiberState) const {
  RL_ASSERT(!"illegal fiber state transition, or one without the fiber's lock");
  std::abort();
}
std::uint64_t FiberEntity::StateClockNow() { return 0; }

// Waiting, the lock released once we are "switched out", and back only once queued,
// made Running by the worker that takes us.
void ParkFiber(FiberEntity* self, std::unique_lock<Spinlock> self_lock) {
  RL_ASSERT(self_lock.owns_lock() && self_lock.mutex() == &self->scheduler_lock);
  self->SetState(FiberState::kWaiting);
  ++g_model->parks;
  self_lock.unlock();
  // acquire: pairs with QueueReadyFiber()'s release, as a run queue's pop does.
  while (g_model->queued.word().load(std::memory_order_acquire) == 0) {
    g_model->queued.ParkWhile(0, MonotonicDeadline::None());
  }
  std::lock_guard<Spinlock> lock(self->scheduler_lock);
  self->SetState(FiberState::kRunning);
}

// A yield with nothing else to run: returns at once (a cancelled wait's, before it
// would park).
void YieldFiber(FiberEntity* fiber) { RL_ASSERT(fiber == g_model->fiber); }

void QueueReadyFiber(FiberEntity* fiber) {
  RL_ASSERT(fiber == g_model->fiber);
  // release: the waker's writes (the flip, Ready) reach the worker that runs the fiber.
  g_model->queued.word().fetch_add(1, std::memory_order_release);
  g_model->queued.UnparkAll();
}

void ArmTimerNodeOnThisWorker(TimerNode* node) {
  g_model->queue.Push(node);
  // release: the timer thread, seeing the event, finds the node in the queue (whose
  // lock orders it anyway).
  g_model->timer_events.word().fetch_add(1, std::memory_order_release);
  g_model->timer_events.UnparkAll();
}

// The TimerWorker thread of a fiber model: fires the timer once it was armed (at any
// time: see the top), popping it from the queue as a firing round does; returns
// without firing if the waiter ended without arming one, or took it out first.
void RunModelTimerThread() {
  for (;;) {
    // Read before the two below, so an event after them changes it and the park
    // returns. acquire: pairs with the events' release increments, so an event counted
    // here is seen below.
    const int seen = g_model->timer_events.word().load(std::memory_order_acquire);
    // acquire: pairs with the waiter's release store, after its arming if it armed;
    // read before the queue, so a waiter seen done is never one whose timer we missed.
    const bool waiter_done = g_model->waiter_done.load(std::memory_order_acquire);
    TimerNode* node = nullptr;
    // The real queue (timer_queue.cc, built against Relacy): exactly one of this pop
    // and the waiter's TimerQueue::Remove() takes the node.
    if (g_model->queue.PopDue(INT64_MAX, &node, 1) == 1) {
      ++g_model->timers_fired;
      node->fire(node);
      g_model->queue.DoneFiring();
      return;
    }
    if (waiter_done) return;
    g_model->timer_events.ParkWhile(seen, MonotonicDeadline::None());
  }
}

namespace {

using testing::ExpectModelHolds;

MonotonicDeadline ModelTimeIn(std::int64_t ns) {
  return MonotonicDeadline::AtNs(ModelClockNs() + ns);
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

// A plain thread's interruptible wait with a deadline against one Notify() and a
// cancellation: exactly one of the three flips wins, and the waiter's result names it.
// The waiter is deleted as soon as WaitUntil() returned: a cancellation still touching
// it (its callback's "done" store) would be an access to freed memory.
struct CancelAgainstNotifyAndTimedWait : rl::test_suite<CancelAgainstNotifyAndTimedWait, 3> {
  StopState* stop = nullptr;
  WaitLimits limits;
  TimedWaiter* waiter = nullptr;
  Spinlock list_lock;
  bool listed = false;  // under list_lock
  TimedWaiter::Result result = TimedWaiter::Result::kTimedOut;
  bool notify_won = false;

  void before() {
    stop = StopState::Create();
    limits.stop = stop;
    waiter = new TimedWaiter;
    listed = true;
  }
  void thread(unsigned index) {
    if (index == 0) {
      result = waiter->WaitUntil(ModelTimeIn(1000), WaitKind::kOther, &limits);
      {
        std::lock_guard<Spinlock> lock(list_lock);
        listed = false;
      }
      delete waiter;
    } else if (index == 1) {
      std::lock_guard<Spinlock> lock(list_lock);
      if (listed) notify_won = waiter->Notify();
    } else {
      RL_ASSERT(stop->RequestStop());
    }
  }
  void after() {
    RL_ASSERT((result == TimedWaiter::Result::kNotified) == notify_won);
    RL_ASSERT(stop->stop_requested());
    stop->Unref();
  }
};

// No deadline, two notifiers: the waiter is notified, by exactly one of them.
struct TwoNotifiesAgainstWait : rl::test_suite<TwoNotifiesAgainstWait, 3> {
  TimedWaiter waiter;
  TimedWaiter::Result result = TimedWaiter::Result::kTimedOut;
  int notifies_won = 0;

  void thread(unsigned index) {
    if (index == 0) {
      result = waiter.WaitUntil(MonotonicDeadline::None());
    } else {
      notifies_won += waiter.Notify() ? 1 : 0;
    }
  }
  void after() {
    RL_ASSERT(result == TimedWaiter::Result::kNotified);
    RL_ASSERT(notifies_won == 1);
  }
};

// A fiber's wait, published on a wait list whose lock its notifiers hold while they
// call Notify() (as WaitQueue's do), against `kNotifiers` notifiers and, with a
// deadline, the TimerWorker's firing of its timer. The waiter leaves the list and is
// deleted as soon as WaitUntil() returns.
template <int kNotifiers, bool kDeadline, bool kCancel = false>
struct FiberWait : rl::test_suite<FiberWait<kNotifiers, kDeadline, kCancel>,
                                  1 + kNotifiers + (kDeadline ? 1 : 0) + (kCancel ? 1 : 0)> {
  static constexpr unsigned kTimerThread = kDeadline ? 1 + kNotifiers : ~0u;
  ModelFiberScheduler model;
  FiberEntity fiber{1, Stack{}, /*is_master=*/false};
  Spinlock list_lock;
  TimedWaiter* listed = nullptr;  // under list_lock
  TimedWaiter::Result result = TimedWaiter::Result::kTimedOut;
  int notifies_won = 0;
  StopState* stop = nullptr;
  WaitLimits limits;

  void before() {
    if (kCancel) {
      stop = StopState::Create();
      limits.stop = stop;
    }
    g_model = &model;
    model.fiber = &fiber;
    {
      std::lock_guard<Spinlock> lock(fiber.scheduler_lock);
      fiber.SetState(FiberState::kRunning);  // the fiber that waits is running
    }
    listed = new TimedWaiter;  // a fiber's waiter: GetCurrentFiberEntity() is ours
  }

  void thread(unsigned index) {
    if (index == 0) {
      TimedWaiter* waiter = listed;  // plain: written in before()
      result = waiter->WaitUntil(kDeadline ? MonotonicDeadline::AtNs(1'000'000'000)
                                           : MonotonicDeadline::None(),
                                 WaitKind::kOther, kCancel ? &limits : nullptr);
      {
        std::lock_guard<Spinlock> lock(list_lock);
        listed = nullptr;
      }
      delete waiter;
      // release (both): the timer thread, seeing either, sees our arming if we armed.
      model.waiter_done.store(true, std::memory_order_release);
      model.timer_events.word().fetch_add(1, std::memory_order_release);
      model.timer_events.UnparkAll();
    } else if (index <= kNotifiers) {
      std::lock_guard<Spinlock> lock(list_lock);
      if (listed != nullptr && listed->Notify()) ++notifies_won;
    } else if (index == kTimerThread) {
      RunModelTimerThread();
    } else {
      RL_ASSERT(stop->RequestStop());
    }
  }

  void after() {
    // relaxed: every model thread has ended.
    const int queued = model.queued.word().load(std::memory_order_relaxed);
    RL_ASSERT(queued == model.parks);  // queued once if it parked, else never
    RL_ASSERT(model.parks <= 1);
    RL_ASSERT(fiber.state() == FiberState::kRunning);
    RL_ASSERT(notifies_won == (result == TimedWaiter::Result::kNotified ? 1 : 0));
    if (!kDeadline && !kCancel) RL_ASSERT(result == TimedWaiter::Result::kNotified);
    if (!kCancel) RL_ASSERT(result != TimedWaiter::Result::kCancelled);
    if (kCancel) {
      RL_ASSERT(stop->stop_requested());
      stop->Unref();
    }
    // The deadline left the queue (taken out by the waiter or popped to fire), and a
    // fired one is what timed the waiter out, if anything did.
    RL_ASSERT(model.queue.size() == 0);
    RL_ASSERT(model.timers_fired <= (kDeadline ? 1 : 0));
    if (result == TimedWaiter::Result::kTimedOut) RL_ASSERT(model.timers_fired == 1);
    g_model = nullptr;
  }
};

TEST(TimedWaiterModelTest, NotifyAgainstTimedWait) {
  ExpectModelHolds<NotifyAgainstTimedWait>(50000);
}
TEST(TimedWaiterModelTest, TwoNotifiesAgainstWait) {
  ExpectModelHolds<TwoNotifiesAgainstWait>(50000);
}

// A fiber's wait with a deadline: Notify() against the timer's callback, both against
// the park (before, during or after it) and the waiter's cancellation of its timer.
TEST(TimedWaiterModelTest, FiberNotifyAgainstDeadline) {
  ExpectModelHolds<FiberWait<1, true>>(100000);
}
// Two notifiers and the deadline: one flip of the three wins.
TEST(TimedWaiterModelTest, FiberTwoNotifiesAgainstDeadline) {
  ExpectModelHolds<FiberWait<2, true>>(100000);
}
// A plain thread: a cancellation against a Notify() and the deadline.
TEST(TimedWaiterModelTest, CancelAgainstNotifyAndTimedWait) {
  ExpectModelHolds<CancelAgainstNotifyAndTimedWait>(100000);
}
// A fiber's interruptible wait: a cancellation against a Notify() and the deadline's
// timer, all three against the park and the waiter's clean-up (timer, registration).
TEST(TimedWaiterModelTest, FiberCancelAgainstNotifyAndDeadline) {
  ExpectModelHolds<FiberWait<1, true, true>>(100000);
}
// No deadline: a cancellation against two notifiers.
TEST(TimedWaiterModelTest, FiberCancelAgainstTwoNotifies) {
  ExpectModelHolds<FiberWait<2, false, true>>(100000);
}
// No deadline: two notifiers, exactly one wakes the parked fiber.
TEST(TimedWaiterModelTest, FiberTwoNotifiesAgainstWait) {
  ExpectModelHolds<FiberWait<2, false>>(50000);
}

}  // namespace
}  // namespace spindle::internal
