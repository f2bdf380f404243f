#!/usr/bin/env bash
# Runs a test binary under chaos scheduling: run_under_chaos.sh STRATEGY SEED BINARY
# [ARGS...]. runtime_testing.cc reads SPINDLE_TEST_CHAOS_SEED (and halves the stress
# loops). Chaos makes every step slower, so the twins run 2 and 16 workers (a pair, and
# two oversubscribed groups of 8 with stealing between them) unless the caller's
# environment names other counts. Used by spindle_cc_test's `<name>_chaos` twins.
set -eu
export SPINDLE_TEST_STRATEGY="$1"
export SPINDLE_TEST_CHAOS_SEED="$2"
export SPINDLE_TEST_WORKER_COUNTS="${SPINDLE_TEST_WORKER_COUNTS:-2,16}"
shift 2
exec "$@"
