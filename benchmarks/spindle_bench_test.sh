#!/usr/bin/env bash
# Usage: spindle_bench_test.sh SPINDLE_BENCH FLAGFILE
# Runs every workload of spindle_bench at a tiny scale (their self-checks), parses the
# JSON output line by line, runs a two-column worker sweep (table and JSON), and checks
# that bad options and flag values are rejected with a message naming them.
set -uo pipefail
bench=$1
flagfile=$2
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# expect_rejected STATUS TEXT ARGS...: spindle_bench ARGS must exit with STATUS (or any
# non-zero status when STATUS is "nonzero") and say TEXT on stderr.
expect_rejected() {
  local want=$1 text=$2
  shift 2
  local err status
  err=$("$bench" --flagfile="$flagfile" "$@" 2>&1 >/dev/null)
  status=$?
  if [ "$want" = nonzero ] && [ $status -eq 0 ] ||
     [ "$want" != nonzero ] && [ $status -ne "$want" ]; then
    fail "$* exited with $status, expected $want"
  fi
  if ! grep -qF -- "$text" <<<"$err"; then
    fail "$*: stderr lacks '$text': $err"
  fi
}

# The workloads, from the message that rejects an unknown one.
expect_rejected 2 "unknown workload 'no_such_workload'" --workloads=no_such_workload
names=$("$bench" --workloads=no_such_workload 2>&1 | sed -n 's/.*accepted: all, //p')
echo "workloads: $names"
[ -n "$names" ] || fail "no workload names in the --workloads error message"

# Every workload at a tiny scale, JSON on stdout.
json=$(mktemp)
trap 'rm -f "$json"' EXIT
if ! "$bench" --flagfile="$flagfile" --scale=0.001 --repetitions=2 --format=json >"$json"; then
  fail "spindle_bench --scale=0.001 --format=json failed"
fi
cat "$json"
python3 - "$json" "$names" <<'PYTHON' || fail "the JSON output does not check out"
import json, sys
path, names = sys.argv[1], [n.strip() for n in sys.argv[2].split(",")]
seen = set()
values = {}
with open(path) as lines:
    for number, line in enumerate(lines, 1):
        row = json.loads(line)  # every line is one JSON object
        assert set(row) == {"workload", "metric", "value", "unit", "reps", "min", "max"}, (number, row)
        assert row["reps"] == 2, (number, row)
        assert isinstance(row["value"], (int, float)), (number, row)
        assert row["min"] <= row["value"] <= row["max"], (number, row)
        seen.add(row["workload"])
        values[(row["workload"], row["metric"])] = (row["value"], row["unit"])
missing = set(names) - seen
assert not missing, f"workloads without a result: {sorted(missing)}"
# fairness: ordered percentiles from its own histogram, a spread of at least 1 and
# shares in range (medians over the repetitions, each in order within its run).
fair = {m: v for (w, m), v in values.items() if w == "fairness"}
assert [fair[m][1] for m in ("wait_p50", "wait_p99", "wait_max")] == ["us"] * 3, fair
assert 0 < fair["wait_p50"][0] <= fair["wait_p99"][0] <= fair["wait_max"][0], fair
assert fair["progress_spread"] == (fair["progress_spread"][0], "x") and fair["progress_spread"][0] >= 1, fair
assert 0 <= fair["progress_cv"][0] and 0 < fair["hog_cpu"][0] <= 110, fair
assert values[("locality", "per_handoff")][0] > 0, values[("locality", "per_handoff")]
print(f"JSON: {number} lines, {len(seen)} workloads")
PYTHON

# --metrics: the scheduler's rows under each workload, every readiness timed (the
# sample period is 1 under --metrics), so yield's samples are about its fiber runs.
if ! "$bench" --flagfile="$flagfile" --scale=0.01 --repetitions=1 --metrics \
    --workloads=yield,pingpong --format=json >"$json"; then
  fail "spindle_bench --metrics --format=json failed"
fi
python3 - "$json" <<'PYTHON' || fail "the --metrics output does not check out"
import json, sys
rows = {}
for line in open(sys.argv[1]):
    row = json.loads(line)
    rows[(row["workload"], row["metric"])] = row["value"]
for workload in ("yield", "pingpong"):
    for metric in ("sched.ready_p50", "sched.ready_p99", "sched.ready_p999",
                   "sched.fiber_runs", "sched.wakeups", "sched.steals_in_group"):
        assert (workload, metric) in rows, (workload, metric, rows)
    samples = rows[(workload, "sched.ready_samples")]
    runs = rows[(workload, "sched.fiber_runs")]
    assert samples >= runs / 2 > 0, (workload, samples, runs)
    assert rows[(workload, "sched.ready_p50")] <= rows[(workload, "sched.ready_p99")], workload
print("--metrics: ready-to-run rows for yield and pingpong, every readiness sampled")
PYTHON

# The table, for two workloads.
table=$("$bench" --flagfile="$flagfile" --scale=0.001 --repetitions=1 --workloads=fib,skynet)
echo "$table"
grep -q '^fib  *wall' <<<"$table" || fail "the table lacks fib's row"
grep -q '^skynet  *wall' <<<"$table" || fail "the table lacks skynet's row"

# A sweep over two worker counts: one table with a column each, and JSON rows that say
# their column.
sweep=(--flagfile="$flagfile" --scale=0.001 --repetitions=1 --workloads=fib,yield
       --sweep_workers=1,2)
table=$("$bench" "${sweep[@]}")
echo "$table"
grep -q '^workload .* v2 w1  *v2 w2$' <<<"$table" || fail "the sweep table lacks its columns"
grep -q '^fib  *wall  *ms  *[0-9.]*  *[0-9.]*$' <<<"$table" || fail "the sweep table lacks fib's row"
grep -q '^yield  *per_switch  *ns  *[0-9.]*\*  *[0-9.]*\*$' <<<"$table" ||
  fail "the sweep table does not mark yield's own shape"
if ! "$bench" "${sweep[@]}" --format=json >"$json"; then
  fail "spindle_bench --sweep_workers=1,2 --format=json failed"
fi
python3 - "$json" <<'PYTHON' || fail "the sweep's JSON output does not check out"
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
for row in rows:
    assert row["workers"] in (1, 2) and row["strategy"] == "v2", row
assert sorted((r["workload"], r["workers"]) for r in rows) == [
    ("fib", 1), ("fib", 2), ("yield", 1), ("yield", 2)], rows
print(f"sweep JSON: {len(rows)} lines")
PYTHON

# Bad options and flag values.
expect_rejected 2 "--repetitions=0" --repetitions=0
expect_rejected 2 "--scale=0" --scale=0
expect_rejected 2 "--scale=-1" --scale=-1
expect_rejected 2 "--format=xml: accepted: table, json" --format=xml
expect_rejected 2 "--workloads=fib,,skynet" --workloads=fib,,skynet
expect_rejected 2 "fiber_run_queue_size" --workloads=fib --fiber_run_queue_size=3
expect_rejected 2 "--sweep_workers=0: '0' is not a worker count: expected integers in [1, " \
  --workloads=fib --sweep_workers=0
expect_rejected 2 "'x' is not a worker count" --workloads=fib --sweep_workers=2,x
expect_rejected 2 "--fiber_scheduling_strategy=no_such_strategy is invalid" \
  --workloads=fib --fiber_scheduling_strategy=v1,no_such_strategy
expect_rejected 2 "--fiber_scheduling_strategy=v1,,v1: an empty strategy name" \
  --workloads=fib --fiber_scheduling_strategy=v1,,v1
expect_rejected nonzero "no_such_flag" --no_such_flag=1
expect_rejected nonzero "scale" --scale=abc

if [ $failures -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "PASS"
