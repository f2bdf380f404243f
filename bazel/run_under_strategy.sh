#!/usr/bin/env bash
# Runs a test binary under a scheduling strategy: run_under_strategy.sh STRATEGY BINARY
# [ARGS...]. runtime_testing.h's ScopedRuntime reads SPINDLE_TEST_STRATEGY. Used by
# spindle_cc_test's `<name>_v2` and `<name>_relaxed` twins (bazel/testing.bzl).
set -eu
export SPINDLE_TEST_STRATEGY="$1"
shift
exec "$@"
