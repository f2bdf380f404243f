#!/usr/bin/env bash
# Runs one ctest entry as Bazel runs a test: with a fresh, empty TEST_TMPDIR (set by
# cmake/SpindleRules.cmake's _spindle_add_test), so nothing a previous run left there
# changes this one. Usage: run_test.sh COMMAND [ARGS...]
set -eu
: "${TEST_TMPDIR:?run_test.sh: TEST_TMPDIR is not set}"
rm -rf "$TEST_TMPDIR"
mkdir -p "$TEST_TMPDIR"
exec "$@"
