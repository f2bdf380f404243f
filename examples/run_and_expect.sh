#!/usr/bin/env bash
# Usage: run_and_expect.sh BINARY EXPECTED_TEXT [ARGS...]
# Runs BINARY with ARGS; passes if it exits 0 and its output contains EXPECTED_TEXT.
set -uo pipefail
binary=$1
expected=$2
shift 2
output=$("$binary" "$@" 2>&1)
status=$?
printf '%s\n' "$output"
if [ $status -ne 0 ]; then
  echo "FAIL: $binary exited with $status" >&2
  exit 1
fi
if ! grep -qF -- "$expected" <<<"$output"; then
  echo "FAIL: output lacks: $expected" >&2
  exit 1
fi
