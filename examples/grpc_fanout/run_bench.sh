#!/usr/bin/env bash
# Copyright 2026 The Spindle Authors.
#
# run_bench.sh --bin DIR [--backends_n N] [--duration_s S] [--warmup_s S]
#              [--outstanding N] [--peak_outstanding N] [--work_us US] [--payload_bytes B]
#              [--deadline_ms MS] [--channels_per_backend N] [--load_channels N]
#              [--client_threads N] [--latency_at_70]
#
# Benchmarks the fan-out example's Frontend variants on 127.0.0.1. DIR holds the binaries
# backend, load and frontend_<variant> (bazel-bin/examples/grpc_fanout, or a CMake build
# directory). Starts --backends_n backends (default 1) for the whole run; then for each
# variant, K in FANOUTS and backend wait in WAITS_US, starts the frontend, runs `load` in
# closed loop (--outstanding queries in flight, default 64) for --warmup_s + --duration_s
# (default 2 + 10), and prints a markdown table row:
#
#   variant | K | backend wait | qps | p50 | p99 | p99.9 | errors | frontend RSS | CPU s
#
# RSS is the frontend's VmHWM (/proc/PID/status) and CPU s its user + system time
# (/proc/PID/stat), both read when the load ends. The sync frontend runs once per value
# in SYNC_MAX_THREADS (its --sync_max_threads; 0 = unlimited) and its best row (highest
# qps) is reported, naming the value.
#
# --latency_at_70 adds a second phase: for each cell, every variant's peak qps (closed
# loop, --peak_outstanding in flight, default 512), then every variant in open loop
# (Poisson arrivals) at 70% of the fastest async variant's peak (callback or cq; all
# variants' if neither ran), reporting its latency there.
#
# Environment: FANOUTS (default "1 8 32"), WAITS_US (default "0 1000"), VARIANTS
# (default "sync callback cq spindle"; a variant whose binary is missing is skipped with a
# note), SYNC_MAX_THREADS (default "16 64 256 0"), FRONTEND_FLAGS (extra flags for every
# frontend, e.g. --fiber_* flags for frontend_spindle), KEEP_LOGS=1 (keep the logs'
# directory, printed at the end).
#
# The table goes to stdout, progress to stderr. Every process started is killed on exit.

set -euo pipefail

usage() {
  sed -n '3,34p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

BIN=""
BACKENDS_N=1
DURATION_S=10
WARMUP_S=2
OUTSTANDING=64
PEAK_OUTSTANDING=512
WORK_US=0
PAYLOAD_BYTES=0
DEADLINE_MS=1000
CHANNELS_PER_BACKEND=4
LOAD_CHANNELS=8
CLIENT_THREADS=2
LATENCY_AT_70=0

while [[ $# -gt 0 ]]; do
  arg="$1"
  shift
  value=""
  case "$arg" in
    --*=*)
      value="${arg#*=}"
      arg="${arg%%=*}"
      ;;
    --latency_at_70 | --help | -h) ;;
    --*)
      [[ $# -gt 0 ]] || { echo "run_bench.sh: $arg needs a value" >&2; exit 2; }
      value="$1"
      shift
      ;;
  esac
  case "$arg" in
    --bin) BIN="$value" ;;
    --backends_n) BACKENDS_N="$value" ;;
    --duration_s) DURATION_S="$value" ;;
    --warmup_s) WARMUP_S="$value" ;;
    --outstanding) OUTSTANDING="$value" ;;
    --peak_outstanding) PEAK_OUTSTANDING="$value" ;;
    --work_us) WORK_US="$value" ;;
    --payload_bytes) PAYLOAD_BYTES="$value" ;;
    --deadline_ms) DEADLINE_MS="$value" ;;
    --channels_per_backend) CHANNELS_PER_BACKEND="$value" ;;
    --load_channels) LOAD_CHANNELS="$value" ;;
    --client_threads) CLIENT_THREADS="$value" ;;
    --latency_at_70) LATENCY_AT_70=1 ;;
    --help | -h) usage ;;
    *) echo "run_bench.sh: unknown argument $arg" >&2; usage ;;
  esac
done

for name in BACKENDS_N DURATION_S WARMUP_S OUTSTANDING PEAK_OUTSTANDING WORK_US PAYLOAD_BYTES \
    DEADLINE_MS CHANNELS_PER_BACKEND LOAD_CHANNELS CLIENT_THREADS; do
  [[ "${!name}" =~ ^[0-9]+$ ]] || {
    flag="$(tr '[:upper:]' '[:lower:]' <<<"$name")"
    echo "run_bench.sh: --$flag=${!name} is not a non-negative integer" >&2
    exit 2
  }
done
[[ -n "$BIN" ]] || { echo "run_bench.sh: --bin DIR is required" >&2; usage; }
[[ "$BACKENDS_N" -ge 1 ]] || { echo "run_bench.sh: --backends_n must be >= 1" >&2; exit 2; }
for binary in backend load; do
  [[ -x "$BIN/$binary" ]] || { echo "run_bench.sh: $BIN/$binary not found" >&2; exit 2; }
done

FANOUTS="${FANOUTS:-1 8 32}"
WAITS_US="${WAITS_US:-0 1000}"
VARIANTS="${VARIANTS:-sync callback cq spindle}"
SYNC_MAX_THREADS="${SYNC_MAX_THREADS:-16 64 256 0}"
FRONTEND_FLAGS="${FRONTEND_FLAGS:-}"
CLK_TCK="$(getconf CLK_TCK)"

WORK="$(mktemp -d /tmp/fanout-bench.XXXXXX)"
PIDS=()
NOTES=()

kill_started() {
  local pid
  for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 50); do
    local alive=0
    for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
    [[ "$alive" -eq 0 ]] && break
    sleep 0.1
  done
  for pid in "${PIDS[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
  PIDS=()
}

on_exit() {
  kill_started
  if [[ "${KEEP_LOGS:-0}" == 1 ]]; then
    echo "run_bench.sh: logs in $WORK" >&2
  else
    rm -rf "$WORK"
  fi
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

log() { echo "run_bench.sh: $*" >&2; }

# start_server NAME COMMAND...: starts COMMAND in the background and waits for its
# "listening on PORT" line. Sets STARTED_PID and STARTED_PORT.
start_server() {
  local name="$1"
  shift
  "$@" >"$WORK/$name.out" 2>"$WORK/$name.err" &
  STARTED_PID=$!
  PIDS+=("$STARTED_PID")
  STARTED_PORT=""
  for _ in $(seq 400); do
    local first
    first="$(head -n 1 "$WORK/$name.out" 2>/dev/null || true)"
    if [[ "$first" =~ ^listening\ on\ ([0-9]+)$ ]]; then
      STARTED_PORT="${BASH_REMATCH[1]}"
      return 0
    fi
    kill -0 "$STARTED_PID" 2>/dev/null || break
    sleep 0.05
  done
  log "$name did not start; its stderr:"
  cat "$WORK/$name.err" >&2
  return 1
}

# stop_server PID: SIGTERM, then up to 10 s to exit, then SIGKILL. Returns 1 if it had
# to be killed or exited non-zero.
stop_server() {
  local pid="$1" status=0
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    status=1
  fi
  wait "$pid" 2>/dev/null || status=1
  forget_pid "$pid"
  return "$status"
}

# forget_pid PID: drops an exited PID from PIDS, so that the exit trap cannot signal
# another process that reuses it.
forget_pid() {
  local kept=() p
  for p in "${PIDS[@]}"; do [[ "$p" == "$1" ]] || kept+=("$p"); done
  PIDS=("${kept[@]+"${kept[@]}"}")
}

rss_mib() { awk '/^VmHWM:/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }

cpu_seconds() {
  local stat fields
  stat="$(cat "/proc/$1/stat")"
  # Fields after the parenthesised command name, which may hold spaces: state is the
  # 1st, utime the 12th, stime the 13th.
  read -r -a fields <<<"${stat##*) }"
  awk -v u="${fields[11]}" -v s="${fields[12]}" -v hz="$CLK_TCK" \
    'BEGIN { printf "%.2f", (u + s) / hz }'
}

# result_field FILE KEY: KEY's value on FILE's RESULT line.
result_field() {
  sed -n "s/^RESULT.* $2=\([^ ]*\).*/\1/p" "$1" | tail -n 1
}

# run_cell VARIANT K WAIT_US OUTFILE LOAD_FLAGS FRONTEND_FLAGS...: one frontend, one load
# run. Sets CELL_RSS, CELL_CPU and CELL_OK (0 if the frontend failed to start, died or
# could not be stopped cleanly).
run_cell() {
  local variant="$1" k="$2" wait_us="$3" out="$4" load_flags="$5"
  shift 5
  CELL_RSS="-"
  CELL_CPU="-"
  CELL_OK=1
  local backend
  for backend in "${BACKEND_PIDS[@]}"; do
    kill -0 "$backend" 2>/dev/null || { log "a backend has exited; stopping"; exit 1; }
  done
  local command=("$BIN/frontend_$variant" --port=0 --backends="$BACKEND_LIST"
    --channels_per_backend="$CHANNELS_PER_BACKEND" --fanout="$k" --deadline_ms="$DEADLINE_MS")
  local extra_flags=()
  read -r -a extra_flags <<<"$FRONTEND_FLAGS"
  command+=("${extra_flags[@]+"${extra_flags[@]}"}" "$@")
  if ! start_server "frontend_$variant" "${command[@]}"; then
    CELL_OK=0
    : >"$out"
    return 0
  fi
  local pid="$STARTED_PID"
  # In the background, so that a SIGTERM/SIGINT trap runs at once rather than after it.
  # shellcheck disable=SC2086  # load_flags is a list of flags
  "$BIN/load" --target="127.0.0.1:$STARTED_PORT" --channels="$LOAD_CHANNELS" \
    --client_threads="$CLIENT_THREADS" --fanout="$k" --backend_wait_us="$wait_us" \
    --backend_work_us="$WORK_US" --payload_bytes="$PAYLOAD_BYTES" \
    --deadline_ms="$DEADLINE_MS" --duration_s="$DURATION_S" --warmup_s="$WARMUP_S" \
    $load_flags >"$out" 2>&1 &
  local load_pid=$!
  PIDS+=("$load_pid")
  wait "$load_pid" || true
  forget_pid "$load_pid"
  if kill -0 "$pid" 2>/dev/null; then
    CELL_RSS="$(rss_mib "$pid")"
    CELL_CPU="$(cpu_seconds "$pid")"
  else
    CELL_OK=0
  fi
  if ! stop_server "$pid"; then
    CELL_OK=0
    NOTES+=("frontend_$variant (K=$k, wait ${wait_us} us, $*) did not exit cleanly on SIGTERM")
  fi
}

errors_cell() {
  local errors by
  errors="$(result_field "$1" errors)"
  by="$(result_field "$1" errors_by_status)"
  if [[ -z "$errors" ]]; then
    echo "no result"
  elif [[ "$errors" == 0 ]]; then
    echo 0
  else
    echo "$errors ($by)"
  fi
}

# --- Backends ---------------------------------------------------------------------------
BACKEND_LIST=""
BACKEND_PIDS=()
for i in $(seq "$BACKENDS_N"); do
  start_server "backend$i" "$BIN/backend" --port=0 --stats_file="$WORK/backend$i.stats" ||
    exit 1
  BACKEND_PIDS+=("$STARTED_PID")
  BACKEND_LIST="${BACKEND_LIST:+$BACKEND_LIST,}127.0.0.1:$STARTED_PORT"
done
log "backends at $BACKEND_LIST; logs in $WORK"

AVAILABLE=()
for variant in $VARIANTS; do
  if [[ -x "$BIN/frontend_$variant" ]]; then
    AVAILABLE+=("$variant")
  else
    NOTES+=("variant $variant skipped: $BIN/frontend_$variant not found")
    log "skipping $variant: $BIN/frontend_$variant not found"
  fi
done

declare -A BEST_SYNC_THREADS=()

# --- Phase 1: closed loop ---------------------------------------------------------------
echo
echo "Closed loop, $OUTSTANDING queries in flight, ${DURATION_S} s after ${WARMUP_S} s warm-up;" \
  "backend work ${WORK_US} us, payload ${PAYLOAD_BYTES} B, $BACKENDS_N backend(s):"
echo
echo "| variant | K | backend wait (us) | qps | p50 (us) | p99 (us) | p99.9 (us) | errors |" \
  "frontend RSS (MiB) | frontend CPU (s) |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for k in $FANOUTS; do
  for wait_us in $WAITS_US; do
    for variant in "${AVAILABLE[@]+"${AVAILABLE[@]}"}"; do
      configs=("")
      [[ "$variant" == sync ]] && read -r -a configs <<<"$SYNC_MAX_THREADS"
      best_qps=-1
      best_row=""
      for config in "${configs[@]}"; do
        label="$variant"
        extra=()
        if [[ "$variant" == sync ]]; then
          extra=(--sync_max_threads="$config")
          label="sync (max_threads=$([[ "$config" == 0 ]] && echo unlimited || echo "$config"))"
        fi
        log "$label K=$k wait=${wait_us}us"
        out="$WORK/closed-$variant-$k-$wait_us-$config.txt"
        run_cell "$variant" "$k" "$wait_us" "$out" "--mode=closed --outstanding=$OUTSTANDING" \
          "${extra[@]+"${extra[@]}"}"
        qps="$(result_field "$out" qps)"
        if [[ -z "$qps" || "$CELL_OK" == 0 ]]; then
          note="$label K=$k wait ${wait_us} us: no result or the frontend failed"
          NOTES+=("$note (see $out; KEEP_LOGS=1 keeps it)")
          qps_cmp=-1
        else
          qps_cmp="$qps"
        fi
        row="| $label | $k | $wait_us | ${qps:--} | $(result_field "$out" p50_us) |"
        row+=" $(result_field "$out" p99_us) | $(result_field "$out" p999_us) |"
        row+=" $(errors_cell "$out") | $CELL_RSS | $CELL_CPU |"
        if awk -v a="$qps_cmp" -v b="$best_qps" 'BEGIN { exit !(a > b) }' || [[ -z "$best_row" ]]
        then
          best_qps="$qps_cmp"
          best_row="$row"
          [[ "$variant" == sync ]] && BEST_SYNC_THREADS["$k-$wait_us"]="$config"
        fi
      done
      echo "$best_row"
    done
  done
done

# --- Phase 2: latency at 70% of the fastest async variant's peak --------------------------
if [[ "$LATENCY_AT_70" == 1 ]]; then
  echo
  echo "Open loop (Poisson arrivals) at 70% of the fastest async variant's peak qps" \
    "(peak: closed loop, $PEAK_OUTSTANDING in flight):"
  echo
  echo "| variant | K | backend wait (us) | peak qps | offered qps | achieved qps | p50 (us) |" \
    "p99 (us) | p99.9 (us) | errors | late |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|"
  for k in $FANOUTS; do
    for wait_us in $WAITS_US; do
      declare -A PEAK=()
      declare -A FLAGS_OF=()
      for variant in "${AVAILABLE[@]+"${AVAILABLE[@]}"}"; do
        FLAGS_OF["$variant"]=""
        if [[ "$variant" == sync ]]; then
          FLAGS_OF["$variant"]="--sync_max_threads=${BEST_SYNC_THREADS["$k-$wait_us"]:-0}"
        fi
        log "peak: $variant K=$k wait=${wait_us}us ${FLAGS_OF[$variant]}"
        out="$WORK/peak-$variant-$k-$wait_us.txt"
        # shellcheck disable=SC2086
        run_cell "$variant" "$k" "$wait_us" "$out" \
          "--mode=closed --outstanding=$PEAK_OUTSTANDING" ${FLAGS_OF[$variant]}
        PEAK["$variant"]="$(result_field "$out" qps)"
      done
      reference=0
      for variant in callback cq; do
        peak="${PEAK[$variant]:-}"
        [[ -n "$peak" ]] && reference="$(awk -v a="$peak" -v b="$reference" \
          'BEGIN { print (a > b ? a : b) }')"
      done
      if awk -v r="$reference" 'BEGIN { exit !(r <= 0) }'; then
        NOTES+=("K=$k wait ${wait_us} us: no async variant ran; 70% of the fastest variant used")
        for variant in "${!PEAK[@]}"; do
          peak="${PEAK[$variant]:-}"
          [[ -n "$peak" ]] && reference="$(awk -v a="$peak" -v b="$reference" \
            'BEGIN { print (a > b ? a : b) }')"
        done
      fi
      rate="$(awk -v r="$reference" 'BEGIN { printf "%.1f", r * 0.7 }')"
      if awk -v r="$rate" 'BEGIN { exit !(r < 0.1) }'; then
        NOTES+=("K=$k wait ${wait_us} us: no peak measured; open-loop runs skipped")
        continue
      fi
      for variant in "${AVAILABLE[@]+"${AVAILABLE[@]}"}"; do
        log "open: $variant K=$k wait=${wait_us}us rate=$rate"
        out="$WORK/open-$variant-$k-$wait_us.txt"
        # shellcheck disable=SC2086
        run_cell "$variant" "$k" "$wait_us" "$out" "--mode=open --rate=$rate" \
          ${FLAGS_OF[$variant]}
        label="$variant"
        [[ "$variant" == sync ]] && label="sync (${FLAGS_OF[$variant]#--sync_})"
        echo "| $label | $k | $wait_us | ${PEAK[$variant]:--} | $rate |" \
          "$(result_field "$out" qps) | $(result_field "$out" p50_us) |" \
          "$(result_field "$out" p99_us) | $(result_field "$out" p999_us) |" \
          "$(errors_cell "$out") | $(result_field "$out" late) |"
      done
      unset PEAK FLAGS_OF
    done
  done
fi

# --- Backends' counters -------------------------------------------------------------------
for i in "${!BACKEND_PIDS[@]}"; do
  stop_server "${BACKEND_PIDS[$i]}" ||
    NOTES+=("backend $((i + 1)) did not exit cleanly on SIGTERM")
  stats="$(cat "$WORK/backend$((i + 1)).stats" 2>/dev/null || echo "no stats file")"
  NOTES+=("backend $((i + 1)): $stats")
done

if [[ ${#NOTES[@]} -gt 0 ]]; then
  echo
  for note in "${NOTES[@]}"; do echo "- $note"; done
fi
