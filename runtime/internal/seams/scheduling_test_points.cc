// Copyright 2026 The Spindle Authors.

#include "runtime/internal/seams/scheduling_test_points.h"

namespace spindle::internal {

#if SPINDLE_HAS_TEST_SEAMS
namespace strategy_internal {
std::atomic<SchedulerTestHook> g_test_hook{nullptr};
std::atomic<bool> g_sleep_recheck_disabled{false};
}  // namespace strategy_internal

void SetSchedulerTestHook(SchedulerTestHook hook) {
  // relaxed: see g_test_hook.
  strategy_internal::g_test_hook.store(hook, std::memory_order_relaxed);
}

void DisableSleepRecheckForTesting(bool disabled) {
  // relaxed: see g_sleep_recheck_disabled.
  strategy_internal::g_sleep_recheck_disabled.store(disabled, std::memory_order_relaxed);
}
#endif  // SPINDLE_HAS_TEST_SEAMS

}  // namespace spindle::internal
