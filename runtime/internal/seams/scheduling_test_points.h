// Copyright 2026 The Spindle Authors.

#ifndef SPINDLE_RUNTIME_INTERNAL_SCHEDULING_TEST_POINTS_H_
#define SPINDLE_RUNTIME_INTERNAL_SCHEDULING_TEST_POINTS_H_

#include <atomic>
#include <cstddef>

#include "runtime/internal/seams/chaos.h"
#include "runtime/internal/seams/test_seams.h"

namespace spindle::internal {

// The worker number a test point gets on a producer's thread (no worker).
inline constexpr std::size_t kNoWorkerIndex = ~std::size_t{0};

// Tests only: the steps of the idle and wake-up protocols (idle_path.cc, notifier.cc,
// spinner_notifier.cc) at which a test may pause, yield or block
// the thread that reaches them, to widen a race window (random pauses under
// oversubscription) or to force one exact interleaving. The hook gets the step and the
// worker's number (kNoWorkerIndex on a producer's thread).
enum class SchedulerTestPoint {
  kSpinning,          // v1: a worker that just joined the spinner set (S1), before it polls
  kBeforeSleep,       // a worker, right before it announces that it will sleep (W1)
  kMarkedSleeping,    // a worker, announced, before its re-check of the queues (W3)
  kBeforeWait,        // a worker whose re-check found nothing, right before it waits
  kSpinnerTookFiber,  // v1: a spinner that found a fiber, before it leaves the set (S3)
  kBeforeWakeUp,      // a producer, after its push, before its wake-up decision
};
using SchedulerTestHook = void (*)(SchedulerTestPoint point, std::size_t worker);
// Installs `hook` (nullptr removes it) in every group. A test seam (test_seams.h):
// defined only in builds with the seams, where it costs one relaxed load of a global per
// step while none is installed (and one more for chaos mode); in other builds a test
// point is nothing at all.
void SetSchedulerTestHook(SchedulerTestHook hook);

// Tests only, a test seam as well: removes the re-check that an idle worker makes after
// it announces its sleep (W3 in idle_path.cc, for every strategy), so that the
// lost-wake-up hammer (lost_wake_hammer.h) and the protocol tests show the wake-up that
// the re-check saves.
void DisableSleepRecheckForTesting(bool disabled);

namespace strategy_internal {
// relaxed (both): a test sets them before it starts the workload they should affect.
extern std::atomic<SchedulerTestHook> g_test_hook;
extern std::atomic<bool> g_sleep_recheck_disabled;
}  // namespace strategy_internal

// Whether a worker re-checks the queues after it announced its sleep: always, but in a
// test that turned it off (DisableSleepRecheckForTesting).
__attribute__((always_inline)) inline bool SleepRecheckEnabled() {
  if constexpr (kTestSeams) {
    return !strategy_internal::g_sleep_recheck_disabled.load(std::memory_order_relaxed);
  } else {
    return true;
  }
}

__attribute__((always_inline)) inline void SchedulerTestPointReached(
    SchedulerTestPoint point, std::size_t worker) {
  if constexpr (kTestSeams) {
    // relaxed: see g_test_hook.
    if (SchedulerTestHook hook =
            strategy_internal::g_test_hook.load(std::memory_order_relaxed)) {
      hook(point, worker);
    }
    ChaosPause();  // chaos mode's pauses (chaos.h, P)
  } else {
    static_cast<void>(point);
    static_cast<void>(worker);
  }
}

}  // namespace spindle::internal

#endif  // SPINDLE_RUNTIME_INTERNAL_SCHEDULING_TEST_POINTS_H_
