#!/usr/bin/env bash
# Usage: scaling_sweep_test.sh SCALING_SWEEP SCALING_CHART SPINDLE_BENCH
# 1. The real spindle_bench at --scale=0.001 (peers left out at that scale): the file has
#    a row per strategy, workload and worker count, and tools/scaling_chart.py draws it.
# 2. Stand-ins for spindle_bench and the peers at --scale=1: the peer rows carry the
#    worker count as GOMAXPROCS (yield at 1 whatever the count), the median and range of
#    the repetitions, and a failing or missing peer is a note, not an error.
# 3. Bad options are rejected with exit status 2, naming the value. Asserts no timings.
set -uo pipefail
sweep=$1
chart=$2
bench=$3
if [ -n "${TEST_TMPDIR:-}" ]; then
  tmp=$TEST_TMPDIR
else
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
fi
failures=0

fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}

# check_json FILE PYTHON: runs the PYTHON assertions with `doc` (FILE's document) and
# `rows` ({(runtime, strategy, workload, metric, workers): row}).
check_json() {
  python3 - "$1" "$2" <<'PYTHON'
import json, sys
doc = json.load(open(sys.argv[1]))
rows = {(r["runtime"], r["strategy"], r["workload"], r["metric"], r["workers"]): r
        for r in doc["rows"]}
assert len(rows) == len(doc["rows"]), "duplicate rows"
exec(sys.argv[2])
PYTHON
}

# 1. The real spindle_bench.
real=$tmp/real.json
if ! "$sweep" --out="$real" --spindle_bench="$bench" --scale=0.001 --repetitions=1 \
    --workers=1,2 --workloads=spawn_join,yield --peers_build="$tmp" 2>"$tmp/real.err"; then
  cat "$tmp/real.err" >&2
  fail "the sweep over the real spindle_bench failed"
fi
check_json "$real" '
assert doc["schema"] == "spindle-scaling/1", doc["schema"]
assert doc["date"].endswith("Z"), doc["date"]
assert doc["machine"]["cpus"] >= 1 and doc["machine"]["description"], doc["machine"]
assert doc["sweep"]["workers"] == [1, 2] and doc["sweep"]["scale"] == 0.001, doc["sweep"]
assert len(doc["load_average"]["start"]) == 3 and len(doc["load_average"]["end"]) == 3, doc
use = doc["cpu_use"]
assert use["wall_s"] > 0 and use["sweep_cpus"] > 0 and use["other_cpus"] >= 0, use
assert any("peers left out" in note for note in doc["notes"]), doc["notes"]
keys = {(s, w, n) for (r, s, w, m, n) in rows if r == "spindle"}
want = {(s, w, n) for s in ("v1", "v2", "relaxed", "globalfifo")
        for w in ("spawn_join", "yield")
        for n in (1, 2)}
assert keys == want, sorted(keys)
assert {r for (r, *_) in rows} == {"spindle"}, sorted(rows)
for row in doc["rows"]:
    assert row["reps"] == 1 and row["min"] <= row["value"] <= row["max"], row
    assert row["own_shape"] == (row["workload"] == "yield"), row
print("real sweep: %d rows" % len(rows))
' || fail "the real sweep's JSON does not check out"
"$chart" "$real" "$tmp/real.png" || fail "the real sweep's JSON was not drawn"

# 2. Stand-ins at --scale=1: spindle_bench prints a spawn_join row per strategy and count;
# gobench prints GOMAXPROCS * 100 plus its call count for spawn_join, GOMAXPROCS * 10 for
# yield, and fails fib's check; there is no tbb_bench.
fakes=$tmp/fakes
mkdir -p "$fakes"
cat >"$fakes/spindle_bench" <<'FAKE'
#!/usr/bin/env bash
for arg; do
  case $arg in
    --sweep_workers=*) counts=${arg#*=} ;;
    --fiber_scheduling_strategy=*) strategies=${arg#*=} ;;
    --workloads=*) workload=${arg#*=} ;;
  esac
done
[ "$workload" = spawn_join ] || exit 0
for s in ${strategies//,/ }; do
  for w in ${counts//,/ }; do
    printf '{"workload": "spawn_join", "metric": "per_fiber", "value": 7, "unit": "ns", '
    printf '"reps": 2, "min": 6, "max": 8, "strategy": "%s", "workers": %s, ' "$s" "$w"
    printf '"own_shape": false}\n'
  done
done
FAKE
cat >"$fakes/gobench" <<'FAKE'
#!/usr/bin/env bash
calls=$(dirname "$0")/spawn_join_calls
case $1 in
  spawn_join)
    n=$(cat "$calls" 2>/dev/null || echo 0)
    echo $((n + 1)) >"$calls"
    echo "go spawn_join $((GOMAXPROCS * 100 + n)) ns/task" ;;
  yield_pingpong) echo "go yield_pingpong $((GOMAXPROCS * 10)) ns/switch" ;;
  fib) echo "VERIFY FAILED: fib" >&2; exit 2 ;;
esac
FAKE
chmod +x "$fakes/spindle_bench" "$fakes/gobench"
faked=$tmp/faked.json
if ! "$sweep" --out="$faked" --spindle_bench="$fakes/spindle_bench" --repetitions=2 \
    --workers=1,3 --strategies=v2 --workloads=spawn_join,yield,fib --peers_build="$fakes" \
    --machine="a test machine" --note="stand-ins" 2>"$tmp/faked.err"; then
  cat "$tmp/faked.err" >&2
  fail "the sweep over the stand-ins failed"
fi
check_json "$faked" '
go = {(w, n): r for (r, s, w, m, n), r in rows.items() if r["runtime"] == "go"}
assert sorted(go) == [("spawn_join", 1), ("spawn_join", 3), ("yield", 1), ("yield", 3)], sorted(go)
one, three = go[("spawn_join", 1)], go[("spawn_join", 3)]
# The counts take turns within a repetition: calls 0 and 2 at 1 worker, 1 and 3 at 3.
assert (one["value"], one["min"], one["max"], one["reps"]) == (101, 100, 102, 2), one
assert (three["value"], three["min"], three["max"]) == (302, 301, 303), three
assert one["metric"] == "per_fiber" and one["unit"] == "ns" and one["strategy"] is None, one
assert not one["own_shape"], one
for n in (1, 3):
    y = go[("yield", n)]
    assert y["value"] == 10 and y["own_shape"] and y["metric"] == "per_switch", y
spindle = sorted(n for (r, s, w, m, n) in rows if r == "spindle" and s == "v2")
assert spindle == [1, 3], spindle
notes = "\n".join(doc["notes"])
for text in ("stand-ins", "go fib at 1 workers failed: exit status 2 VERIFY FAILED: fib",
             "go fib at 3 workers failed", "onetbb left out: no ", "/fakes/tbb_bench"):
    assert text in notes, (text, notes)
assert doc["machine"]["description"] == "a test machine", doc["machine"]
print("stand-in sweep: %d rows" % len(rows))
' || fail "the stand-in sweep's JSON does not check out"

# 3. Bad options.
expect_rejected() {
  local text=$1 err
  shift
  err=$("$sweep" --out="$tmp/rejected.json" "$@" 2>&1 >/dev/null)
  local status=$?
  [ $status -eq 2 ] || fail "$*: exit status $status, expected 2"
  grep -qF -- "$text" <<<"$err" || fail "$*: stderr lacks '$text': $err"
}
expect_rejected "'1,0' is not a list of worker counts" --workers=1,0 --spindle_bench="$bench"
expect_rejected "--repetitions=0: must be at least 1" --repetitions=0 --spindle_bench="$bench"
expect_rejected "--spindle_bench=$tmp/none: not an executable file" --spindle_bench="$tmp/none"
[ ! -e "$tmp/rejected.json" ] || fail "a rejected sweep wrote its file"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "PASS"
