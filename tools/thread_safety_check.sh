#!/usr/bin/env bash
# Checks the library's lock contracts with clang's thread-safety analysis: every
# library .cc under fiber/ runtime/ sync/ timer/ io/ (not tests, not benchmarks) is
# compiled with `clang++ -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror`,
# twice: as the default build compiles it and with the test seams (SPINDLE_TEST_SEAMS=1,
# as --config=seams), so code under `#if SPINDLE_HAS_TEST_SEAMS` is checked too.
# The contracts are the ABSL_GUARDED_BY / ABSL_EXCLUSIVE_LOCKS_REQUIRED annotations on
# fields and functions; the locks are capabilities (internal::Spinlock,
# internal::OsMutex) taken through annotated guards (SpinlockGuard, OsMutexGuard, ...).
# A template in a header is checked only where a .cc here instantiates it (BatchPool
# is; CountingSemaphore is not).
#
#   tools/thread_safety_check.sh            # all files, 2 in parallel
#   JOBS=4 tools/thread_safety_check.sh
#   tools/thread_safety_check.sh sync/event.cc ...   # only these files
#
# Prints one line per file that fails (with clang's diagnostics after it) and a summary;
# exits non-zero if any file fails. Installs Debian's clang if it is missing. The
# headers of Debian's libraries come from /usr/include, as in the Bazel build
# (bazel/third_party/BUILD.bazel); nothing is generated, so -I. is the whole path.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2

SPINDLE_DEPS_QUIET=1 tools/install_deps.sh clang || exit 2

jobs=${JOBS:-2}
if (($#)); then
  files=("$@")
else
  # model_testing.cc is built only in model builds, against Relacy (atomic.h).
  mapfile -t files < <(find fiber runtime sync timer io -name '*.cc' \
    ! -name '*_test.cc' ! -name '*_benchmark.cc' ! -name 'model_testing.cc' | sort)
fi
flags=(-std=c++17 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror -I.)

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
start=$(date +%s)
failed=0
checked=0
for variant in default seams; do
  defines=()
  if [ "$variant" = seams ]; then defines=(-DSPINDLE_TEST_SEAMS=1); fi
  mkdir -p "$out/$variant"
  # One clang per file; its diagnostics go to a file named after the source.
  printf '%s\n' "${files[@]}" | xargs -P "$jobs" -I{} sh -c '
    log="$1/$(echo "$2" | tr / _).log"
    shift 2
    clang++ "$@" >"$log" 2>&1 || echo "$?" >"$log.failed"
  ' sh "$out/$variant" {} "${flags[@]}" "${defines[@]}" {}
  for f in "${files[@]}"; do
    checked=$((checked + 1))
    log="$out/$variant/$(echo "$f" | tr / _).log"
    if [ -e "$log.failed" ]; then
      failed=$((failed + 1))
      echo "FAILED ($variant): $f"
      sed 's/^/    /' "$log"
    fi
  done
done
echo "thread_safety_check: $checked compilations (${#files[@]} files x default, seams)," \
  "$failed failed, in $(($(date +%s) - start)) s"
[ "$failed" -eq 0 ]
