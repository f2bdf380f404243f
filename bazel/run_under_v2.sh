#!/usr/bin/env bash
# Runs a test binary (the first argument, with the rest as its arguments) under
# scheduling strategy v2: runtime_testing.h's ScopedRuntime reads SPINDLE_TEST_STRATEGY.
# Used by spindle_cc_test's `<name>_v2` twin (bazel/testing.bzl).
export SPINDLE_TEST_STRATEGY=v2
exec "$@"
