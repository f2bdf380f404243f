// Copyright 2026 The Spindle Authors.
//
// Models of the TimerWorker (timer_worker.cc, the real source built against Relacy:
// atomic.h; its locks are Relacy's through spinlock.h and os_mutex.h): the thread's
// loop against Stop() and against producers' Add(), and busy workers' assists
// (FireDue) against Add(), with the thread running and with it held off its CPU.
//
// Time in a model passes only when a timed futex wait times out (model_atomic.h), so a
// timer that fires after its expiry plus the grace the protocol allows was slept
// through: the model's callbacks check that. A lost wake-up of the thread leaves it
// parked forever (Relacy: deadlock).
//
// The scheduler is not part of these models: their timers are inline timers (the kind
// a sleeping fiber's deadline uses), so no fiber is started; the functions the timer
// unit calls into the scheduler for are defined below, and must not be reached.

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "fiber/internal/atomic.h"
#include "fiber/internal/model_testing.h"
#include "glog/logging.h"
#include "gtest/gtest.h"
#include "runtime/internal/base/fiber_desc.h"
#include "runtime/internal/base/ready_batch.h"
#include "runtime/internal/base/parker.h"
#include "runtime/internal/queues/global_run_queue.h"
#include "timer/internal/timer_worker.h"

namespace spindle::internal {

// The scheduler's side, which the models' inline timers never reach.
void StartFiberIn(SchedulingGroup*, FiberDesc*) { LOG(FATAL) << "no fibers in a timer model"; }
FiberDesc* NewFiberDesc(absl::AnyInvocable<void()>) {
  LOG(FATAL) << "no fibers in a timer model";
}
void QueueReadyFibers(SchedulingGroup*, FiberEntity* const*, std::size_t, bool) {
  LOG(FATAL) << "no fibers in a timer model";
}
std::size_t GroupIndex(const SchedulingGroup*) { return 0; }
std::size_t GroupWorkerCount(const SchedulingGroup*) { return 0; }
// No model thread is a worker: the queue models arm with TimerWorker::AddToQueue().
SchedulingGroup* ThisThreadWorkerGroup(std::size_t* worker) {
  *worker = SIZE_MAX;
  return nullptr;
}
void MarkThisThreadAsRuntimeThread(bool) {}

// What a model drives of a TimerWorker: its loop, on a model thread instead of its own
// std::thread, and the two halves of Stop() (the join between them is the model's end).
struct TimerWorkerModelAccess {
  // Gives each of `threads` model threads its producer list (ThisThreadList() in a
  // model build): called from a model's before(), while no other thread runs.
  static void MakeProducerLists(TimerWorker& worker, std::size_t threads) {
    OsMutexGuard lock(worker.producers_lock_);
    for (std::size_t i = 0; i < threads; ++i) {
      worker.producers_.push_back(std::make_unique<TimerWorker::ProducerList>());
      worker.model_lists_.push_back(worker.producers_.back().get());
    }
  }
  static void Run(TimerWorker& worker) { worker.Run(); }
  static void RequestStop(TimerWorker& worker) { worker.RequestStop(); }
  static void CancelPendingAfterStop(TimerWorker& worker) { worker.CancelPendingAfterStop(); }
  // relaxed: read in after(), when every model thread has ended.
  static std::int64_t PublishedExpiry(TimerWorker& worker) {
    return worker.next_expiry_ns_.load(std::memory_order_relaxed);
  }
  static constexpr std::int64_t kAssistGraceNs = TimerWorker::kAssistGraceNs;
};

namespace {

using testing::ExpectModelHolds;
using Access = TimerWorkerModelAccess;

// The models' TimerWorkers have two workers' queues; a poll from kNotAWorker fires no
// queue of its own.
constexpr std::size_t kQueues = 2;
constexpr std::size_t kNotAWorker = SIZE_MAX;

// An inline timer of a model. It counts its calls and checks that it was not slept
// through: when it fires, the clock may have passed its expiry, or the time its Add()
// returned if that was later, by `allowed_late_ns` at most. (Model time jumps: a
// thread's timed wait that times out moves the clock to its deadline, which may happen
// while a producer is between its append and its wake-up; the protocol promises a
// timely firing from the return of Add() on.)
struct ModelTimer {
  TimerEntry entry;
  // The same timer armed in a worker's queue instead (AddToQueue), as a sleep is.
  TimerNode node;
  // Plain fields: a model's threads take turns.
  int calls = 0;
  Atomic<int> fires{0};  // the same count, in a word Relacy watches
  std::int64_t expires_ns = 0;
  std::int64_t allowed_late_ns = 0;
  std::int64_t added_ns = -1;  // the clock when Add() returned
  std::int64_t fired_ns = -1;  // the clock when it fired
  Parker* fired = nullptr;

  // Arms the timer for `expires_ns` on the model's clock; the model keeps a reference
  // of its own, so the entry never returns to the pool.
  void Arm(std::int64_t ns, std::int64_t late_ns, Parker* fired_count) {
    expires_ns = ns;
    allowed_late_ns = late_ns;
    fired = fired_count;
    entry.expires = MonotonicDeadline::AtNs(ns);
    entry.inline_callback = &ModelTimer::OnFire;
    entry.inline_arg = this;
    // The worker's and the model's. relaxed: before the entry is handed to Add(), whose
    // list lock publishes it.
    entry.refs.store(2, std::memory_order_relaxed);
  }

  void AddTo(TimerWorker& worker) {
    worker.Add(&entry);
    added_ns = ModelClockNs();
  }

  // Arms it in queue `queue` (as worker `queue`'s thread does) instead of a list.
  void AddToQueue(TimerWorker& worker, std::size_t queue) {
    node.expires_ns = expires_ns;
    node.fire = &ModelTimer::OnNodeFire;
    RL_ASSERT(worker.AddToQueue(queue, &node));
    added_ns = ModelClockNs();
  }
  static void OnNodeFire(TimerNode* node) {
    OnFire(reinterpret_cast<char*>(node) - offsetof(ModelTimer, node));
  }

  static void OnFire(void* arg) {
    auto* timer = static_cast<ModelTimer*>(arg);
    // relaxed: Relacy's own word, so that a call on a deleted timer is an access to
    // freed memory in the model.
    timer->fires.fetch_add(1, std::memory_order_relaxed);
    ++timer->calls;
    timer->fired_ns = ModelClockNs();
    RL_ASSERT(timer->fired_ns >= timer->expires_ns);  // not early
    if (timer->fired != nullptr) {
      // release: pairs with WaitFired()'s acquire.
      timer->fired->word().fetch_add(1, std::memory_order_release);
      timer->fired->Unpark();
    }
  }

  // After the run: fired once and not slept through.
  void ExpectFiredInTime() const {
    RL_ASSERT(calls == 1);
    RL_ASSERT(fired_ns <= std::max(expires_ns, added_ns) + allowed_late_ns);
  }

  // After the run: fired exactly once, or (when the worker stopped first) not at all
  // and cancelled.
  void ExpectFiredOrCancelled() {
    // relaxed: in after(), when every model thread has ended.
    const int state = entry.state.load(std::memory_order_relaxed);
    RL_ASSERT(calls == 1 ? state == TimerEntry::kDone
                         : calls == 0 && state == TimerEntry::kCancelled);
  }
};

// Parks until `count` timers of `fired` have fired.
void WaitFired(Parker& fired, int count) {
  for (;;) {
    const int seen = fired.word().load(std::memory_order_acquire);  // acquire: OnFire
    if (seen >= count) return;
    fired.ParkWhile(seen, MonotonicDeadline::None());
  }
}

// Stop() against the loop's two reads (the wake-up sequence, then the stop flag), with
// a producer's timer on the way: the loop must end (else Relacy reports the deadlock
// of a thread that slept through the stop, bug 2 of issue 30), and the timer must be
// fired or cancelled, once.
struct StopAgainstTheLoop : rl::test_suite<StopAgainstTheLoop, 3> {
  TimerWorker worker{nullptr, kQueues};
  ModelTimer timer;

  void before() {
    Access::MakeProducerLists(worker, 3);
    timer.Arm(ModelClockNs() + 1000, 0, nullptr);
  }
  void thread(unsigned index) {
    if (index == 0) {
      Access::Run(worker);
    } else if (index == 1) {
      Access::RequestStop(worker);
    } else {
      timer.AddTo(worker);
    }
  }
  void after() {
    Access::CancelPendingAfterStop(worker);
    timer.ExpectFiredOrCancelled();
  }
};

// Two producers add timers while the thread sleeps, the second earlier than the first:
// each must wake the thread when its timer is earlier than the one it sleeps for, so
// that neither fires late. A waiter stops the worker once both fired.
struct ProducersAgainstTheLoop : rl::test_suite<ProducersAgainstTheLoop, 4> {
  TimerWorker worker{nullptr, kQueues};
  Parker fired;
  ModelTimer timers[2];

  void before() {
    Access::MakeProducerLists(worker, 4);
    timers[0].Arm(ModelClockNs() + 2000, 0, &fired);
    timers[1].Arm(ModelClockNs() + 1000, 0, &fired);
  }
  void thread(unsigned index) {
    if (index == 0) {
      Access::Run(worker);
    } else if (index == 3) {
      WaitFired(fired, 2);
      Access::RequestStop(worker);
    } else {
      timers[index - 1].AddTo(worker);
    }
  }
  void after() {
    Access::CancelPendingAfterStop(worker);
    for (const ModelTimer& timer : timers) timer.ExpectFiredInTime();
  }
};

// A busy worker's assist against a producer's Add(), with the thread held off its CPU
// (it never runs): the workers are then the only ones to fire, and they fire only what
// the published expiry says is due. So once the Add() calls and the assists have
// returned, no timer may wait uncollected behind a published expiry later than its
// own (bug 6 of issue 30: an assist published the heap's new front over a timer added
// during its round).
struct AssistAgainstAddWithTheThreadHeld : rl::test_suite<AssistAgainstAddWithTheThreadHeld, 2> {
  TimerWorker worker{nullptr, kQueues};
  ModelTimer timers[2];

  void before() {
    Access::MakeProducerLists(worker, 2);
    // Both are due at once: the clock stands at 10,000.
    ModelClockNs() = 10000;
    timers[0].Arm(1000, 0, nullptr);
    timers[1].Arm(2000, 0, nullptr);
    timers[0].allowed_late_ns = timers[1].allowed_late_ns = 10000;
  }
  void thread(unsigned index) {
    if (index == 0) {
      timers[0].AddTo(worker);
      timers[1].AddTo(worker);
    } else {
      for (int poll = 0; poll < 2; ++poll) {
        const std::int64_t now = ModelClockNs();
        if (worker.Due(kNotAWorker, now)) worker.FireDue(kNotAWorker, now);
      }
    }
  }
  void after() {
    const std::int64_t published = Access::PublishedExpiry(worker);
    for (ModelTimer& timer : timers) {
      RL_ASSERT(timer.calls <= 1);
      if (timer.calls == 0) RL_ASSERT(published <= timer.expires_ns);
    }
    Access::RequestStop(worker);
    Access::CancelPendingAfterStop(worker);
    for (ModelTimer& timer : timers) timer.ExpectFiredOrCancelled();
  }
};

// The thread, a producer and an assisting worker together: every timer fires, none
// later than the grace the thread allows itself while workers assist (kAssistGraceNs),
// and the thread does not sleep past a timer an assist collected (step d).
struct AssistAgainstAddAndTheLoop : rl::test_suite<AssistAgainstAddAndTheLoop, 4> {
  TimerWorker worker{nullptr, kQueues};
  Parker fired;
  ModelTimer timers[2];

  void before() {
    Access::MakeProducerLists(worker, 4);
    timers[0].Arm(ModelClockNs() + 2000, Access::kAssistGraceNs, &fired);
    timers[1].Arm(ModelClockNs() + 1000, Access::kAssistGraceNs, &fired);
  }
  void thread(unsigned index) {
    if (index == 0) {
      Access::Run(worker);
    } else if (index == 1) {
      timers[0].AddTo(worker);
      timers[1].AddTo(worker);
    } else if (index == 2) {
      for (int poll = 0; poll < 3; ++poll) {
        const std::int64_t now = ModelClockNs();
        if (worker.Due(kNotAWorker, now)) worker.FireDue(kNotAWorker, now);
      }
    } else {
      WaitFired(fired, 2);
      Access::RequestStop(worker);
    }
  }
  void after() {
    Access::CancelPendingAfterStop(worker);
    for (const ModelTimer& timer : timers) timer.ExpectFiredInTime();
  }
};

// Workers arm timers in their own queues while the thread sleeps, the second of worker
// 0's earlier than its first, and worker 1's in between: each arming that lowers its
// queue's front must wake the thread when its timer is earlier than the one it sleeps
// for (the same store-buffering pair as a list's, with the queue's front for the list),
// so that none fires late.
struct QueueArmsAgainstTheLoop : rl::test_suite<QueueArmsAgainstTheLoop, 4> {
  TimerWorker worker{nullptr, kQueues};
  Parker fired;
  ModelTimer timers[3];

  void before() {
    Access::MakeProducerLists(worker, 4);
    timers[0].Arm(ModelClockNs() + 3000, 0, &fired);
    timers[1].Arm(ModelClockNs() + 1000, 0, &fired);
    timers[2].Arm(ModelClockNs() + 2000, 0, &fired);
  }
  void thread(unsigned index) {
    if (index == 0) {
      Access::Run(worker);
    } else if (index == 1) {  // worker 0
      timers[0].AddToQueue(worker, 0);
      timers[1].AddToQueue(worker, 0);
    } else if (index == 2) {  // worker 1
      timers[2].AddToQueue(worker, 1);
    } else {
      WaitFired(fired, 3);
      Access::RequestStop(worker);
    }
  }
  void after() {
    Access::CancelPendingAfterStop(worker);
    for (const ModelTimer& timer : timers) timer.ExpectFiredInTime();
  }
};

// A cancel racing the fire (a deadline wait notified as its deadline passes): the owner
// arms a timer in its queue, then takes it out (TimerQueue::Remove) while the thread
// may be firing it. Exactly one happens: removed, and it never fires; or not queued any
// more, and it fires once, the canceller waiting for the call as TimedWaiter does. The
// timer is deleted as soon as the canceller is done with it: a thread that touched it
// afterwards is an access to freed memory to Relacy.
struct QueueCancelAgainstTheFire : rl::test_suite<QueueCancelAgainstTheFire, 3> {
  TimerWorker worker{nullptr, kQueues};
  Parker fired;
  Parker cancelled;  // the canceller is done
  ModelTimer* timer = nullptr;
  int calls_seen = 0;
  bool removed = false;

  void before() {
    Access::MakeProducerLists(worker, 3);
    timer = new ModelTimer;
    // Due at once: the thread, woken by the arming, fires it while the owner cancels.
    timer->Arm(ModelClockNs(), 0, &fired);
  }
  void thread(unsigned index) {
    if (index == 0) {
      Access::Run(worker);
    } else if (index == 1) {  // the owner: arm, then cancel
      timer->AddToQueue(worker, 0);
      const TimerQueue::RemoveResult result = TimerQueue::Remove(&timer->node);
      removed = result == TimerQueue::RemoveResult::kRemoved;
      if (!removed) {
        RL_ASSERT(result == TimerQueue::RemoveResult::kNotQueued);
        WaitFired(fired, 1);  // popped to fire: wait for the call
      }
      calls_seen = timer->calls;
      delete timer;
      // release: pairs with the stopper's acquire load.
      cancelled.word().store(1, std::memory_order_release);
      cancelled.Unpark();
    } else {
      // acquire: pairs with the canceller's release store.
      while (cancelled.word().load(std::memory_order_acquire) == 0) {
        cancelled.ParkWhile(0, MonotonicDeadline::None());
      }
      Access::RequestStop(worker);
    }
  }
  void after() {
    Access::CancelPendingAfterStop(worker);
    RL_ASSERT(calls_seen == (removed ? 0 : 1));
    // relaxed: every model thread has ended.
    RL_ASSERT(fired.word().load(std::memory_order_relaxed) == calls_seen);
  }
};

// A busy worker's assist against its sibling's arming in the sibling's own queue, with
// the thread held off its CPU: once both have returned, the timer has fired, or the
// published expiry says it is due (so the next poll fires it). Both are due at once.
struct AssistAgainstQueueArmWithTheThreadHeld
    : rl::test_suite<AssistAgainstQueueArmWithTheThreadHeld, 2> {
  TimerWorker worker{nullptr, kQueues};
  ModelTimer timers[2];

  void before() {
    Access::MakeProducerLists(worker, 2);
    ModelClockNs() = 10000;
    timers[0].Arm(1000, 0, nullptr);
    timers[1].Arm(2000, 0, nullptr);
    timers[0].allowed_late_ns = timers[1].allowed_late_ns = 10000;
  }
  void thread(unsigned index) {
    if (index == 0) {  // worker 0 arms and goes on (its own polls are not modelled)
      timers[0].AddToQueue(worker, 0);
      timers[1].AddToQueue(worker, 0);
    } else {  // worker 1 polls twice
      for (int poll = 0; poll < 2; ++poll) {
        const std::int64_t now = ModelClockNs();
        if (worker.Due(1, now)) worker.FireDue(1, now);
      }
    }
  }
  void after() {
    const std::int64_t published = Access::PublishedExpiry(worker);
    for (ModelTimer& timer : timers) {
      RL_ASSERT(timer.calls <= 1);
      if (timer.calls == 0) RL_ASSERT(published <= timer.expires_ns);
    }
    Access::RequestStop(worker);
    Access::CancelPendingAfterStop(worker);
  }
};

TEST(TimerWorkerModelTest, QueueArmsAgainstTheLoop) {
  // More runs than the others: step 4's re-read of the queues' fronts taken out, the
  // model's first late timer came at iteration 242,722.
  ExpectModelHolds<QueueArmsAgainstTheLoop>(300000);
}
TEST(TimerWorkerModelTest, QueueCancelAgainstTheFire) {
  ExpectModelHolds<QueueCancelAgainstTheFire>(50000);
}
TEST(TimerWorkerModelTest, AssistAgainstQueueArmWithTheThreadHeld) {
  ExpectModelHolds<AssistAgainstQueueArmWithTheThreadHeld>(50000);
}
TEST(TimerWorkerModelTest, StopAgainstTheLoop) { ExpectModelHolds<StopAgainstTheLoop>(50000); }
TEST(TimerWorkerModelTest, ProducersAgainstTheLoop) {
  ExpectModelHolds<ProducersAgainstTheLoop>(50000);
}
TEST(TimerWorkerModelTest, AssistAgainstAddWithTheThreadHeld) {
  ExpectModelHolds<AssistAgainstAddWithTheThreadHeld>(50000);
}
TEST(TimerWorkerModelTest, AssistAgainstAddAndTheLoop) {
  ExpectModelHolds<AssistAgainstAddAndTheLoop>(50000);
}

}  // namespace
}  // namespace spindle::internal
