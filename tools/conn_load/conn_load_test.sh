#!/usr/bin/env bash
# conn_load against the HTTP example (see BUILD.bazel). Every wait is a deadline (`read
# -t`, conn_load's own --deadline_secs), never a sleep.
# Usage: conn_load_test.sh CONN_LOAD HTTP_SERVER
set -uo pipefail
[ -n "${CONN_LOAD_TEST_TRACE:-}" ] && set -x
conn_load=$1
server_binary=$2
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/conn_load.XXXXXX")
pid=""
fail() {
  echo "FAIL: $*" >&2
  [ -f "$dir/err" ] && tail -20 "$dir/err" >&2
  [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null
  exit 1
}
# Starts the server on an ephemeral port: sets pid and port.
start_server() {
  rm -f "$dir/out"
  mkfifo "$dir/out"
  "$server_binary" --listen=127.0.0.1:0 --fiber_concurrency=2 --idle_timeout_ms=600000 \
    --max_connections=1000 --drain_timeout_ms=2000 >"$dir/out" 2>"$dir/err" &
  pid=$!
  exec 4<"$dir/out"
  read -t 20 -r line <&4 || fail "no 'listening on' line within 20 s"
  port=${line##*:}
  [[ $port =~ ^[0-9]+$ ]] || fail "no port in: $line"
}
# The value of `key` in conn_load's report $1.
value() { awk -v k="$2" '$1 == k {print $2}' "$1"; }

start_server
"$conn_load" --target="127.0.0.1:$port" --server_pid="$pid" --connections=300 \
  --busy_fraction=0.1 --idle_secs=0.3 --busy_secs=0.5 --deadline_secs=${CONN_LOAD_TEST_DEADLINE:-20} \
  >"$dir/report" 2>"$dir/load_err" || fail "conn_load failed: $(cat "$dir/load_err")"
cat "$dir/report"
[ "$(value "$dir/report" opened)" = 300 ] || fail "opened is not 300"
[ "$(value "$dir/report" busy_connections)" = 30 ] || fail "busy_connections is not 30"
awk '$1 == "busy_requests" && $2 >= 30 {ok=1} END {exit !ok}' "$dir/report" ||
  fail "fewer busy requests than busy connections"
awk '$1 == "rss_per_connection_kib" && $2 > 0 && $2 < 1024 {ok=1} END {exit !ok}' "$dir/report" ||
  fail "rss_per_connection_kib out of (0, 1024)"
sockets_before=$(value "$dir/report" sockets_before)
[ "$(value "$dir/report" sockets_open)" -ge $((sockets_before + 300)) ] ||
  fail "the server does not hold a socket per connection"
[ "$(value "$dir/report" sockets_after)" = "$sockets_before" ] ||
  fail "sockets not back: $(value "$dir/report" sockets_after) after, $sockets_before before"
kill -TERM "$pid"
wait "$pid" || fail "the server's exit status after SIGTERM was not 0"

# SIGTERM with every connection open: the server closes them all and exits.
start_server
"$conn_load" --target="127.0.0.1:$port" --server_pid="$pid" --connections=300 \
  --busy_fraction=0 --idle_secs=0.2 --busy_secs=0.1 --sigterm --deadline_secs=${CONN_LOAD_TEST_DEADLINE:-20} \
  >"$dir/report2" 2>"$dir/load_err" || fail "conn_load --sigterm failed: $(cat "$dir/load_err")"
cat "$dir/report2"
[ "$(value "$dir/report2" sigterm_closed)" = 300 ] || fail "not every connection was closed"
[ "$(value "$dir/report2" server_exited)" = 1 ] || fail "the server did not exit"
wait "$pid" || fail "the server's exit status after SIGTERM was not 0"
pid=""

# Bad flags: exit 2, naming the flag, the value and the range.
"$conn_load" --connections=0 --server_pid=$$ 2>"$dir/bad"
[ $? -eq 2 ] && grep -q -- "--connections=0 is out of range: expected \[1, 1000000\]" "$dir/bad" ||
  fail "--connections=0 not refused by name: $(cat "$dir/bad")"
"$conn_load" --server_pid=0 2>"$dir/bad"
[ $? -eq 2 ] && grep -q -- "--server_pid=0 names no process" "$dir/bad" ||
  fail "--server_pid=0 not refused by name: $(cat "$dir/bad")"
"$conn_load" --target=localhost --server_pid=$$ 2>"$dir/bad"
[ $? -eq 2 ] && grep -q -- "--target=localhost is not IPv4ADDRESS:PORT" "$dir/bad" ||
  fail "--target=localhost not refused by name: $(cat "$dir/bad")"
echo PASS
