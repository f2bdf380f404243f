#!/usr/bin/env bash
# The echo_server binary end to end: starts it on an ephemeral port, echoes one frame
# over bash's /dev/tcp, sends SIGTERM with that connection still open (idle, between
# frames: the drain closes it at once), and expects it to stop and exit 0. Every wait
# is a `read -t` or `timeout` deadline, never a sleep.
# Usage: echo_server_sigterm_test.sh ECHO_SERVER
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
printf '\x00\x00\x00\x02hi' >&3
echoed=$(timeout 20 head -c 6 <&3 | tail -c 2) || fail "no echo within 20 s"
[[ $echoed == "hi" ]] || fail "unexpected echo: $echoed"
kill -TERM "$pid"
read -t 20 -r line <&4 || fail "no 'stopped' line within 20 s of SIGTERM"
[[ $line == *stopped* ]] || fail "unexpected line after SIGTERM: $line"
# The idle connection was closed by the drain: end of stream.
rest=$(timeout 20 cat <&3) || fail "the idle connection was not closed"
[[ -z $rest ]] || fail "unexpected bytes after the drain: $rest"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || fail "exit status $status after SIGTERM, expected 0"
first_line=$line

# A second signal during a drain ends the process at once: a connection in the middle
# of a frame would otherwise hold the drain for its whole minute.
mkfifo "$dir/out2"
"$server_binary" --listen=127.0.0.1:0 --fiber_concurrency=2 --drain_timeout_ms=60000 \
  >"$dir/out2" 2>"$dir/err" &
pid=$!
exec 7<"$dir/out2"  # as the first server's: a fifo, read with a deadline
read -t 20 -r line <&7 || fail "no 'listening on' line within 20 s (second server)"
port=${line##*:}
[[ $port =~ ^[0-9]+$ ]] || fail "no port in: $line"
exec 5<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to port $port"
printf '\x00\x00\x00\x09half' >&5  # 4 of 9 payload bytes: busy
# The server has the half frame once an idle probe on a second connection is echoed.
exec 6<>"/dev/tcp/127.0.0.1/$port" || fail "cannot connect to port $port"
printf '\x00\x00\x00\x01p' >&6
probe=$(timeout 20 head -c 5 <&6 | tail -c 1) || fail "no probe echo within 20 s"
[[ $probe == "p" ]] || fail "unexpected probe echo: $probe"
kill -TERM "$pid"
kill -INT "$pid"
timeout 20 tail --pid="$pid" -f /dev/null || fail "a second signal did not end the drain"
wait "$pid"
status=$?
[ "$status" -ne 0 ] || fail "exit status 0 after a second signal, expected 128+signal"
echo "PASS: $first_line; a second signal ended the drain with status $status"
