// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_
#define SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_

#include <mutex>
#include <vector>

#include "fiber/internal/fiber_entity.h"
#include "fiber/internal/spinlock.h"

namespace spindle::internal {

// What the layers above the scheduler (sync/, timer/, fiber/) need to block and wake
// fibers, without the scheduler's headers. Each call goes to the fiber's own scheduling
// group (FiberEntity::scheduling_group), whatever strategy it runs.

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

// While alive on a thread, QueueReadyFiber() calls on that thread (and so ResumeFiber())
// collect their fibers; the destructor queues them, one batch and one wake-up round per
// group. For a thread that readies many fibers in a burst: the timer thread wraps each
// firing round in one; the synchronization primitives wrap their wake-ups in one so the
// queueing happens after their internal lock is released. A nested scope leaves the
// collecting to the outermost one. Thread-bound.
class ReadyBatch {
 public:
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

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_READY_BATCH_H_
