#!/usr/bin/env bash
# The scheduling trace end to end: trace_workload records a known workload, trace_check.py
# checks the JSON (parses, no overlapping slices, every run has its cause, counts equal
# the metrics over the window), trace_timeline.py draws it, and bad input is refused.
# Usage: trace_test.sh WORKLOAD CHECK_PY TIMELINE_PY
set -euo pipefail
workload=$1 check=$2 timeline=$3
tmp=${TEST_TMPDIR:-$(mktemp -d)}
out=$("$workload" --out="$tmp/trace.json")
echo "$out"
metrics=$(grep '^metrics ' <<<"$out")
"$check" "$tmp/trace.json" "$metrics"
"$timeline" "$tmp/trace.json" "$tmp/trace.png"
head -c 8 "$tmp/trace.png" | od -An -c | grep -q 'P   N   G' || { echo "FAIL: not a PNG"; exit 1; }
# Bad input: named.
if "$timeline" "$tmp/trace.json" "$tmp/x.png" --from-us 10 --to-us 5 2>"$tmp/err"; then
  echo "FAIL: an empty window was accepted"; exit 1
fi
grep -q -- "--from-us=10 must be below --to-us=5" "$tmp/err"
echo "not json" >"$tmp/bad.json"
if "$check" "$tmp/bad.json" 2>"$tmp/err"; then echo "FAIL: bad JSON passed"; exit 1; fi
grep -q "is not JSON" "$tmp/err"
# A trace with overlapping slices on one track is caught.
/usr/bin/python3 - "$tmp/trace.json" "$tmp/overlap.json" <<'PY'
import json, sys
trace = json.load(open(sys.argv[1]))
runs = [e for e in trace["traceEvents"] if e.get("ph") == "X"]
copy = dict(runs[0]); copy["ts"] = runs[0]["ts"] + runs[0]["dur"] / 2 + 0.01
copy["dur"] = runs[0]["dur"] + 5; copy["name"] = "intruder"
trace["traceEvents"].append(copy)
json.dump(trace, open(sys.argv[2], "w"))
PY
if "$check" "$tmp/overlap.json" 2>"$tmp/err"; then echo "FAIL: overlap passed"; exit 1; fi
grep -q "overlaps" "$tmp/err"
echo "PASS"
