// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_
#define SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_

#include <cstddef>
#include <mutex>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

class SchedulingGroup;  // scheduling_group.h
struct FiberDesc;       // fiber_desc.h

// What the layers above the scheduler (sync/, timer/, fiber/) need to block and wake
// fibers, and the timer thread to start them, without the scheduler's headers. Each call
// goes to the fiber's own scheduling group (FiberEntity::scheduling_group), whatever
// strategy it runs, or, for a wake-up by a worker of another group of its node that may
// steal from it, to that worker's group (SchedulingGroup::AdoptsOnWake).
//
// The functions below are declared here and defined in scheduling_group.cc: a direct
// call resolved at link time, no function pointer on the paths every wake-up and park
// takes. This target (//runtime/internal/base:ready_batch) therefore does not depend on the
// scheduler, and neither do the layers that use only it (//sync:mutex and the like);
// any binary that runs fibers links the scheduler through //runtime, and with it the
// definitions. In debug and sanitizer builds, ParkFiber and YieldFiber abort if the
// calling thread holds a pthread mutex (os_lock_check.h).

// Makes a Waiting fiber Ready and queues it. Takes the fiber's scheduler lock, so it
// waits for a parking fiber to finish switching away (see ParkFiber()). Any thread.
void ResumeFiber(FiberEntity* fiber);
// Queues a fiber the caller has already made Ready under its scheduler lock (collected
// instead while a ReadyBatch is alive on this thread). Any thread.
void QueueReadyFiber(FiberEntity* fiber);
// Parks the running fiber `self`: it becomes Waiting and its worker runs something
// else. The caller holds self's scheduler lock (`self_lock`); it is released by the
// context switched to, after self is saved, so a ResumeFiber() racing with this cannot
// run self too early. Returns when some thread has resumed self.
void ParkFiber(FiberEntity* self, std::unique_lock<Spinlock> self_lock);
// Lets other Ready fibers of self's group run; returns at once if there are none.
void YieldFiber(FiberEntity* self);
// Starts the new fiber `desc` in `group` (ownership passes to it) and wakes a worker:
// how the timer thread runs a timer's callback. Any thread.
void StartFiberIn(SchedulingGroup* group, FiberDesc* desc);
// The index of `group` in its runtime, which its TimerWorker shares.
std::size_t GroupIndex(const SchedulingGroup* group);
// How many workers `group` has (its TimerWorker keeps a timer queue for each).
std::size_t GroupWorkerCount(const SchedulingGroup* group);
// The group whose worker this thread is, with its number in `*worker`; null on a
// thread that is no worker. Read afresh after any switch (a fiber may move).
SchedulingGroup* ThisThreadWorkerGroup(std::size_t* worker);
// Queues `n` Ready fibers of `group` at once and wakes up to `n` workers (those that
// the calling worker's group adopts, AdoptsOnWake, are queued there instead); with
// `timer_round`, as the fibers woken by one firing round of the group's timers
// (SchedulingStrategy::EnqueueWoken: v2 runs them ahead of its local queues). What
// ReadyBatch's destructor calls for each group's share. Any thread.
void QueueReadyFibers(SchedulingGroup* group, FiberEntity* const* fibers, std::size_t n,
                      bool timer_round);

// While alive on a thread, QueueReadyFiber() calls on that thread (and so ResumeFiber())
// collect their fibers; the destructor queues them, one batch and one wake-up round per
// group. For a thread that readies many fibers in a burst: the timer thread wraps each
// firing round in one; the synchronization primitives wrap their wake-ups in one so the
// queueing happens after their internal lock is released. A nested scope leaves the
// collecting to the outermost one. Thread-bound.
class ReadyBatch {
 public:
  // Gives the calling thread's collecting buffer room for a firing round's share now,
  // so that its first batches (on a hot path) allocate nothing: for a runtime thread as
  // it starts (a worker, a timer thread).
  static void PrepareThisThread();

  enum class Source {
    kAny,
    // A firing round of a TimerWorker: its fibers are overdue, and the strategy may run
    // them ahead of its other queued fibers (SchedulingStrategy::EnqueueWoken).
    kTimerRound,
  };

  explicit ReadyBatch(Source source = Source::kAny);
  ~ReadyBatch();
  ReadyBatch(const ReadyBatch&) = delete;
  ReadyBatch& operator=(const ReadyBatch&) = delete;

 private:
  const Source source_;  // the outermost scope's decides
  bool outermost_ = false;  // this scope collects (into a thread-local buffer)
};

namespace ready_batch_internal {
// The buffer the calling thread's outermost ReadyBatch collects into, or null (set and
// cleared by ReadyBatch, on its own thread only; ready_batch.cc).
extern thread_local std::vector<FiberEntity*>* collecting;
}  // namespace ready_batch_internal

// Where QueueReadyFiber() on this thread collects instead of queueing, or null when no
// ReadyBatch is alive here. Inline: every wake-up asks. Not cached across a fiber
// switch (a fiber may resume on another thread); no caller switches while it holds it.
inline std::vector<FiberEntity*>* ThisThreadReadyBatch() {
  return ready_batch_internal::collecting;
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_
