#!/usr/bin/env bash
# The fan-out example end to end, briefly: run_bench.sh with each frontend (Spindle's
# and the synchronous, callback and completion-queue baselines) against one backend, a
# second of closed-loop load at K=8 and a 1 ms backend wait. Passes when every variant
# served queries with no error (each reply's sum checked by the load generator) and shut
# down cleanly on SIGTERM. Measures nothing: the figures come from run_bench.sh on a
# quiet machine (docs/grpc.md).
#
#   grpc_fanout_test.sh RUN_BENCH_SH BACKEND_BINARY   (the other binaries beside it)
set -euo pipefail
run_bench=$1
bin=$(dirname "$2")
out=$(mktemp)
trap 'rm -f "$out"' EXIT

FANOUTS=8 WAITS_US=1000 SYNC_MAX_THREADS=0 VARIANTS="spindle sync callback cq" \
  bash "$run_bench" --bin "$bin" --duration_s 1 --warmup_s 0 --outstanding 16 \
  --deadline_ms 20000 >"$out"
cat "$out"

status=0
for variant in spindle sync callback cq; do
  row=$(grep -E "^\| $variant( |\b)" "$out" || true)
  if [[ -z "$row" ]]; then
    echo "FAIL: no row for $variant"
    status=1
    continue
  fi
  qps=$(awk -F'|' '{gsub(/ /, "", $5); print $5}' <<<"$row")
  errors=$(awk -F'|' '{gsub(/^ +| +$/, "", $9); print $9}' <<<"$row")
  if ! awk -v q="$qps" 'BEGIN { exit !(q > 0) }'; then
    echo "FAIL: $variant served no query (qps $qps)"
    status=1
  fi
  if [[ "$errors" != 0 ]]; then
    echo "FAIL: $variant had errors: $errors"
    status=1
  fi
done
if grep -q "did not exit cleanly" "$out"; then
  echo "FAIL: a server did not exit cleanly on SIGTERM"
  status=1
fi
exit $status
