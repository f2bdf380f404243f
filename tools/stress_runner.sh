#!/usr/bin/env bash
# Spindle's stress runner: runs every C++ test binary many times over, with many workers,
# under a time limit per binary, and prints one line per binary. Run it before resolving
# any change to the scheduler, sync or io, here and on a bigger machine.
#
#   tools/stress_runner.sh                       build (default and tsan) and run
#   tools/stress_runner.sh --configs=tsan --repeat=3 --only=sync
#   tools/stress_runner.sh --print-binaries=tsan pack these (docs/internals/testing-and-ci.md, "Stress runs")
#   tools/stress_runner.sh --bin-dir=DIR --config=tsan
#                                                run binaries built elsewhere: DIR holds
#                                                the *_test executables, or is a folder
#                                                with bin/ and a `run` wrapper
#
# Options:
#   --configs=LIST      build configurations to build and run, from default, seams,
#                       asan, tsan (default: default,tsan); seams, asan and tsan carry
#                       the test seams (chaos mode, the test points: test_seams.h), and
#                       only they build the tests that need them
#   --repeat=N          --gtest_repeat for the default and asan configurations (20)
#   --tsan-repeat=N     --gtest_repeat under tsan (5)
#   --timeout=S         wall-clock limit per binary, in seconds (1800); a binary past it
#                       gets its threads' stacks dumped (if gdb is there) and is killed
#   --workers=LIST      the worker counts of scheduler-facing tests, as
#                       SPINDLE_TEST_WORKER_COUNTS (default 1,2,4,8,16)
#   --strategies=LIST   the scheduling strategies to run every binary under, as
#                       SPINDLE_TEST_STRATEGY, from v1, v2, relaxed, globalfifo
#                       (default: all four)
#   --only=REGEX        run only binaries whose name matches (grep -E)
#   --shuffle           also pass --gtest_shuffle (a new order in every repetition)
#   --log-dir=DIR       where each binary's full output goes (default: a new temp dir)
#   --bin-dir=DIR       run already-built binaries from DIR instead of building
#   --config=NAME       with --bin-dir: which configuration they were built in (default),
#                       for the sanitizer options and the repeat count
#   --print-binaries=C  build configuration C's test binaries and print their paths
#
# Output: one line per binary and strategy, `STATUS CONFIG STRATEGY NAME REPEATS SECONDS`, STATUS being PASS,
# FAIL (with the failing tests named below it) or TIMEOUT (with the test that was
# running); then a summary. Exit status 0 only if every binary passed. Needs bash,
# coreutils and, to build, ./bazelw; nothing else from this machine.
set -uo pipefail

configs="default,tsan"
repeat=20
tsan_repeat=5
timeout_s=1800
workers="1,2,4,8,16"
strategies="v1,v2,relaxed,globalfifo"
only=""
shuffle=0
log_dir=""
bin_dir=""
bin_config="default"
print_binaries=""

usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 2; }
die() { echo "stress_runner: $*" >&2; exit 2; }
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

for arg in "$@"; do
  case $arg in
    --configs=*) configs=${arg#*=} ;;
    --repeat=*) repeat=${arg#*=} ;;
    --tsan-repeat=*) tsan_repeat=${arg#*=} ;;
    --timeout=*) timeout_s=${arg#*=} ;;
    --workers=*) workers=${arg#*=} ;;
    --strategies=*) strategies=${arg#*=} ;;
    --only=*) only=${arg#*=} ;;
    --shuffle) shuffle=1 ;;
    --log-dir=*) log_dir=${arg#*=} ;;
    --bin-dir=*) bin_dir=${arg#*=} ;;
    --config=*) bin_config=${arg#*=} ;;
    --print-binaries=*) print_binaries=${arg#*=} ;;
    -h|--help) usage ;;
    *) die "unknown option '$arg' (--help lists them)" ;;
  esac
done

is_count "$repeat" || die "--repeat=$repeat: expected an integer >= 1"
is_count "$tsan_repeat" || die "--tsan-repeat=$tsan_repeat: expected an integer >= 1"
is_count "$timeout_s" || die "--timeout=$timeout_s: expected a number of seconds >= 1"
[[ $workers =~ ^[0-9]+(,[0-9]+)*$ ]] ||
  die "--workers=$workers: expected a comma-separated list of worker counts in [1, 64]"
for w in ${workers//,/ }; do
  ((w >= 1 && w <= 64)) || die "--workers=$workers: $w is outside [1, 64]"
done
IFS=, read -r -a strategy_list <<<"$strategies"
((${#strategy_list[@]})) || die "--strategies is empty: expected v1, v2, relaxed and/or globalfifo"
for s in "${strategy_list[@]}"; do
  case $s in v1|v2|relaxed|globalfifo) ;; *) die "--strategies=$strategies: '$s' is not one of v1, v2, relaxed, globalfifo" ;; esac
done
check_config() {
  case $1 in
    default|seams|asan|tsan) ;;
    *) die "$2=$1: expected default, seams, asan or tsan" ;;
  esac
}
IFS=, read -r -a config_list <<<"$configs"
((${#config_list[@]})) || die "--configs is empty: expected default, seams, asan and/or tsan"
for c in "${config_list[@]}"; do check_config "$c" --configs; done
check_config "$bin_config" --config
[ -z "$print_binaries" ] || check_config "$print_binaries" --print-binaries

root=$(cd "$(dirname "$0")/.." && pwd)

bazel_config_args() { if [ "$1" != default ]; then echo "--config=$1"; fi; }

# Builds configuration $1's cc_test binaries; prints their paths. Tests that need the
# test seams (target_compatible_with = NEEDS_TEST_SEAMS, bazel/testing.bzl) exist only in
# the configurations that carry them.
build_binaries() {
  # The model tests (tag "model": Relacy, one thread, the same interleavings on every
  # run) gain nothing from repeats or worker counts, and exist only without the seams.
  local config=$1 targets bin query='kind(cc_test, //...) except attr(tags, "\bmodel\b", //...)'
  if [ "$config" = default ]; then
    query="$query except attr(target_compatible_with, incompatible, //...)"
  fi
  targets=$(cd "$root" && ./bazelw query "$query" 2>/dev/null | sort) ||
    die "bazel query failed"
  (cd "$root" && ./bazelw build $(bazel_config_args "$config") $targets >&2) ||
    die "build of the $config test binaries failed"
  bin=$(cd "$root" && ./bazelw info $(bazel_config_args "$config") bazel-bin 2>/dev/null)
  for t in $targets; do
    t=${t#//}
    echo "$bin/${t%%:*}/${t#*:}"
  done
}

if [ -n "$print_binaries" ]; then
  build_binaries "$print_binaries"
  exit 0
fi

[ -n "$log_dir" ] || log_dir=$(mktemp -d /tmp/spindle-stress.XXXXXX)
mkdir -p "$log_dir" || die "cannot create --log-dir=$log_dir"

passed=0
failed=0
runner_start=$(date +%s)

# Runs one binary under every strategy of --strategies: run_one CONFIG NAME COMMAND...
run_one() {
  local strategy
  for strategy in "${strategy_list[@]}"; do
    run_one_strategy "$strategy" "$@"
  done
}

# Runs one binary once: run_one_strategy STRATEGY CONFIG NAME COMMAND...
run_one_strategy() {
  local strategy=$1; shift
  local config=$1 name=$2; shift 2
  local reps=$repeat sanitizer_env=()
  case $config in
    tsan)
      reps=$tsan_repeat
      sanitizer_env=(TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:report_signal_unsafe=0)
      ;;
    asan) sanitizer_env=(ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0) ;;
  esac
  local log="$log_dir/$config.$strategy.$(basename "${name//:/.}").log"
  local args=("--gtest_repeat=$reps")
  if ((shuffle)); then args+=(--gtest_shuffle); fi
  local start end pid status=PASS
  start=$(date +%s%N)
  env SPINDLE_TEST_WORKER_COUNTS="$workers" SPINDLE_TEST_STRATEGY="$strategy" \
    "${sanitizer_env[@]}" "$@" "${args[@]}" \
    >"$log" 2>&1 &
  pid=$!
  local deadline=$(($(date +%s) + timeout_s))
  while kill -0 "$pid" 2>/dev/null; do
    if (($(date +%s) >= deadline)); then
      status=TIMEOUT
      # The wrapper (env, or a packed `run`) execs the test, so $pid is the test itself.
      if command -v gdb >/dev/null; then
        {
          echo "=== stress_runner: time limit of ${timeout_s} s reached; thread stacks:"
          timeout 120 gdb -p "$pid" -batch -ex "thread apply all bt" 2>&1
        } >>"$log"
      fi
      kill -KILL "$pid" 2>/dev/null
      break
    fi
    sleep 0.2
  done
  wait "$pid" 2>/dev/null
  local rc=$?
  end=$(date +%s%N)
  if [ "$status" = PASS ] && [ "$rc" -ne 0 ]; then status=FAIL; fi
  local tenths=$(((end - start) / 100000000))
  printf '%-8s %-8s %-8s %-42s %3sx %6d.%d s\n' "$status" "$config" "$strategy" "$name" "$reps" \
    $((tenths / 10)) $((tenths % 10))
  if [ "$status" = PASS ]; then
    passed=$((passed + 1))
    return
  fi
  failed=$((failed + 1))
  if [ "$status" = TIMEOUT ]; then
    grep -E '^\[ RUN      \]' "$log" | tail -1 | sed 's/^/         running: /'
  else
    grep -E '^\[  FAILED  \] [^ ]+\.' "$log" | sort -u | head -20 | sed 's/^/         /'
    grep -E 'ThreadSanitizer|AddressSanitizer|Check failed|terminate called' "$log" |
      head -3 | sed 's/^/         /'
  fi
  echo "         log: $log"
}

if [ -n "$bin_dir" ]; then
  [ -d "$bin_dir" ] || die "--bin-dir=$bin_dir is not a folder"
  bin_dir=$(cd "$bin_dir" && pwd)
  wrapper=()
  search=$bin_dir
  if [ -x "$bin_dir/run" ] && [ -d "$bin_dir/bin" ]; then  # a packed folder
    search=$bin_dir/bin
  fi
  mapfile -t binaries < <(find "$search" -maxdepth 1 -name '*_test' -type f -perm -u+x | sort)
  ((${#binaries[@]})) || die "--bin-dir=$bin_dir holds no *_test executables"
  echo "stress_runner: ${#binaries[@]} binaries from $bin_dir ($bin_config), workers" \
    "$workers, limit ${timeout_s} s each; logs in $log_dir"
  for b in "${binaries[@]}"; do
    name=$(basename "$b")
    if [ -n "$only" ] && ! grep -qE "$only" <<<"$name"; then continue; fi
    if [ "$search" != "$bin_dir" ]; then
      run_one "$bin_config" "$name" "$bin_dir/run" "$name"
    else
      run_one "$bin_config" "$name" "$b"
    fi
  done
else
  for config in "${config_list[@]}"; do
    echo "stress_runner: building the $config test binaries"
    mapfile -t binaries < <(build_binaries "$config")
    ((${#binaries[@]})) || exit 2
    echo "stress_runner: ${#binaries[@]} binaries ($config), workers $workers, limit" \
      "${timeout_s} s each; logs in $log_dir"
    for b in "${binaries[@]}"; do
      name=${b#*/bin/}
      name=//${name%/*}:${name##*/}
      if [ -n "$only" ] && ! grep -qE "$only" <<<"$name"; then continue; fi
      run_one "$config" "$name" "$b"
    done
  done
fi

echo "stress_runner: $passed passed, $failed failed or timed out," \
  "$(($(date +%s) - runner_start)) s in all"
((failed == 0 && passed > 0))
