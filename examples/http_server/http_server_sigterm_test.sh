#!/usr/bin/env bash
# The http_server binary end to end: starts it on an ephemeral port, gets GET / over
# bash's /dev/tcp, sends SIGTERM, and expects it to drain and exit 0. Every wait is a
# `read -t` or `timeout` deadline, never a sleep.
# Usage: http_server_sigterm_test.sh HTTP_SERVER
set -uo pipefail
server_binary=$1
dir=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sigterm.XXXXXX")
mkfifo "$dir/out"
"$server_binary" --listen=127.0.0.1:0 --fiber_concurrency=2 --drain_timeout_ms=2000 \
  >"$dir/out" 2>"$dir/err" &
pid=$!
exec 4<"$dir/out"  # stays readable after the server exits
fail() {
  echo "FAIL: $*" >&2
  cat "$dir/err" >&2
  kill -KILL "$pid" 2>/dev/null
  exit 1
}
read -t 20 -r line <&4 || fail "no 'listening on' line within 20 s"
port=${line##*:}
[[ $port =~ ^[0-9]+$ ]] || fail "no port in: $line"
exec 3<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to port $port"
printf 'GET / HTTP/1.1\r\nHost: test\r\nConnection: close\r\n\r\n' >&3
response=$(timeout 20 cat <&3) || fail "no complete response within 20 s"
exec 3<&-
[[ $response == "HTTP/1.1 200 OK"* && $response == *"hello, world"* ]] ||
  fail "unexpected response: $response"
kill -TERM "$pid"
read -t 20 -r line <&4 || fail "no 'drained' line within 20 s of SIGTERM"
[[ $line == *drained* ]] || fail "unexpected line after SIGTERM: $line"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM, expected 0"
echo "PASS: $line"
