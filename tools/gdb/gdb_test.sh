#!/usr/bin/env bash
# Runs gdb_test.py (Bazel's sh_test and CMake's add_test take a shell script).
set -euo pipefail
exec python3 "$@"
