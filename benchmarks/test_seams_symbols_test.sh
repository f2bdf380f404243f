#!/usr/bin/env bash
# The test seams (runtime/internal/seams/test_seams.h) are in a binary exactly when the build
# asked for them: test_seams_symbols_test.sh absent|present BINARY. `absent` (every build
# without --define=spindle_test_seams=1, -c opt among them; the opt lane of .ci/run runs
# this there): spindle_bench's symbol table names no part of chaos mode and no scheduler
# or timer test point. `present` (--config=seams, asan, tsan): it names them, so the
# pattern below is known to match what it looks for.
set -euo pipefail
expect=$1
binary=$2
case "$expect" in
  absent | present) ;;
  *) echo "usage: $0 absent|present BINARY (got '$expect')" >&2; exit 2 ;;
esac
command -v nm >/dev/null || { echo "nm (binutils) is missing" >&2; exit 2; }

# Symbols of the seams: chaos mode (chaos.h and SchedulingGroup's Chaos* members), the
# scheduler's test points and its re-check switch (scheduling_test_points.h), v1's stalled
# push, the TimerWorker's hooks. The --fiber_chaos_seed flag itself stays in every build
# (a nonzero value is refused by name), so its gflags symbols are left out.
pattern='spindle::internal::(Chaos|StartChaos|StopChaos|SetChaosDecisionsForTesting|chaos_internal::|SetSchedulerTestHook|DisableSleepRecheckForTesting|strategy_internal::g_test_hook|strategy_internal::g_sleep_recheck_disabled|StrategyV1::(Begin|Finish)StalledPushForTesting|SetTimerWorker(Assist)?TestHook|timer_internal::g_(assist_)?test_hook)'

symbols=$(nm -C "$binary")
[ -n "$symbols" ] || { echo "nm printed no symbols for $binary (stripped?)" >&2; exit 1; }
found=$(grep -E "$pattern" <<<"$symbols" || true)
count=$(grep -c . <<<"$found" || true)

if [ "$expect" = absent ]; then
  if [ -n "$found" ]; then
    echo "FAIL: $binary carries $count test-seam symbols in a build without the seams:" >&2
    head -20 <<<"$found" >&2
    exit 1
  fi
  echo "PASS: no test-seam symbols in $binary"
else
  for must in 'spindle::internal::StartChaos' 'spindle::internal::SetSchedulerTestHook' \
              'spindle::internal::ChaosPick(' 'spindle::internal::ChaosYield(' \
              'spindle::internal::SetTimerWorkerTestHook'; do
    if ! grep -qF "$must" <<<"$found"; then
      echo "FAIL: $binary was built with the test seams but has no $must" >&2
      exit 1
    fi
  done
  echo "PASS: $count test-seam symbols in $binary, as the build asked"
fi
