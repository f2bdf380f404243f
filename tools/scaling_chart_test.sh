#!/usr/bin/env bash
# Usage: scaling_chart_test.sh SCALING_CHART FIXTURE
# Draws the fixture (three workloads, four lines, invented figures) and checks that the
# PNG is one, of a sensible size, and that the script says what it drew; then feeds it
# bad input (a missing file, malformed JSON, no rows, a bad row, an unwritable output)
# and checks each fails with a message naming the file or the value. Asserts no timings.
set -uo pipefail
chart=$1
fixture=$2
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

# expect_rejected TEXT INPUT [OUTPUT]: the chart of INPUT must fail, saying TEXT.
expect_rejected() {
  local text=$1 input=$2 output=${3:-$tmp/rejected.png}
  local err
  if err=$("$chart" "$input" "$output" 2>&1 >/dev/null); then
    fail "$input was accepted, expected: $text"
  elif ! grep -qF -- "$text" <<<"$err"; then
    fail "$input: stderr lacks '$text': $err"
  fi
}

# The fixture: a PNG (magic bytes, then an IHDR chunk of a sensible width and height).
png=$tmp/fixture.png
if ! out=$("$chart" "$fixture" "$png"); then
  fail "the fixture was not drawn"
fi
echo "$out"
want="wrote $png: 3 workloads (spawn_join, yield, sleep), lines: Spindle v1, Spindle v2, Go, oneTBB"
grep -qF -- "$want" <<<"$out" || fail "stdout lacks '$want'"
want="title: Spindle scaling: test fixture, no CPU (invented numbers), 2026-01-02"
grep -qxF -- "$want" <<<"$out" || fail "stdout lacks '$want'"
if [ ! -s "$png" ]; then
  fail "no PNG at $png"
else
  magic=$(head -c 16 "$png" | od -An -tx1 | tr -d ' \n')
  [ "$magic" = 89504e470d0a1a0a0000000d49484452 ] || fail "$png is not a PNG: $magic"
  read -r width height < <(od -An -tu1 -j16 -N8 "$png" |
    awk '{print $1*16777216+$2*65536+$3*256+$4, $5*16777216+$6*65536+$7*256+$8}')
  echo "PNG: $(stat -c %s "$png") bytes, ${width}x${height}"
  { [ "$width" -ge 800 ] && [ "$width" -le 4000 ] && [ "$height" -ge 300 ] &&
    [ "$height" -le 4000 ]; } || fail "$png is ${width}x${height}"
fi

# Bad input, each named in the message.
expect_rejected "cannot read $tmp/no_such.json" "$tmp/no_such.json"
printf '{"rows": [' >"$tmp/truncated.json"
expect_rejected "$tmp/truncated.json is not valid JSON" "$tmp/truncated.json"
printf '[1, 2]' >"$tmp/list.json"
expect_rejected 'expected a JSON object with "rows", got list' "$tmp/list.json"
printf '{"machine": "m", "date": "d", "rows": []}' >"$tmp/empty.json"
expect_rejected "$tmp/empty.json has no rows" "$tmp/empty.json"
printf '{"machine": "m", "date": "d"}' >"$tmp/no_rows.json"
expect_rejected "$tmp/no_rows.json has no rows" "$tmp/no_rows.json"
row='"runtime": "go", "workload": "fib", "metric": "wall", "unit": "ms"'
printf '{"machine": "m", "date": "d", "rows": [{%s, "workers": "two", "value": 1}]}' "$row" \
  >"$tmp/bad_workers.json"
expect_rejected 'row 1: "workers" is "two", expected a number' "$tmp/bad_workers.json"
printf '{"machine": "m", "date": "d", "rows": [{%s, "workers": 2, "value": 0}]}' "$row" \
  >"$tmp/zero.json"
expect_rejected 'row 1: "value" is 0, expected a number > 0' "$tmp/zero.json"
printf '{"date": "d", "rows": [{%s, "workers": 2, "value": 1}]}' "$row" >"$tmp/no_machine.json"
expect_rejected 'lacks "machine"' "$tmp/no_machine.json"
expect_rejected "cannot write $tmp/no_such_dir/out.png" "$fixture" "$tmp/no_such_dir/out.png"
"$chart" >/dev/null 2>&1
[ $? -eq 2 ] || fail "no arguments: expected exit status 2"

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed" >&2
  exit 1
fi
echo "PASS"
