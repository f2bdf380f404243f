#!/usr/bin/env bash
# Idle keep-alive connections against examples/http_server: opens N connections (each
# sends one GET / and reads its answer, then stays open and silent), then reports the
# server's RSS growth per connection and the CPU it uses while they idle.
#
#   tools/http_idle_bench.sh            # 10,000 connections, 10 s idle window
#   CONNS=2000 IDLE_SECS=5 tools/http_idle_bench.sh
#
# Knobs: CONNS (10000), IDLE_SECS (10), WORKERS (2), PORT (18085). The client is a small
# Python program (one thread, non-blocking sockets); it needs CONNS + 100 descriptors,
# so the script raises its own soft RLIMIT_NOFILE to the hard limit.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
conns=${CONNS:-10000}; idle=${IDLE_SECS:-10}; workers=${WORKERS:-2}; port=${PORT:-18085}
cd "$repo" || exit 2
source tools/server_lib.sh
ulimit -n "$(ulimit -Hn)" || true
./bazelw build -c opt //examples/http_server >&2 || { echo "build failed" >&2; exit 1; }
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
cp bazel-bin/examples/http_server/http_server "$work/http_server" || exit 1
"$work/http_server" --listen="127.0.0.1:$port" --fiber_concurrency="$workers" \
  --idle_timeout_ms=3600000 >"$work/server.log" 2>&1 &
server=$!
wait_until_serving http_idle_bench "$server" "$work/server.log" "$port" || exit 1
rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$server/status"; }
cpu_ticks() { awk '{print $14 + $15}' "/proc/$server/stat"; }
# One warm-up connection so that the first-use costs (reactor, pools) are not counted.
python3 - "$port" 1 0 <<'PY' >/dev/null
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"); s.recv(4096); s.close()
PY
rss_before=$(rss_kib)
mkfifo "$work/ready" "$work/done"
python3 - "$port" "$conns" "$work/ready" "$work/done" <<'PY' &
import selectors, socket, sys
port, n, ready, done = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
request = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
socks, answered = [], 0
sel = selectors.DefaultSelector()
for i in range(n):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(request)
    s.setblocking(False)
    sel.register(s, selectors.EVENT_READ)
    socks.append(s)
    # Keep the accept backlog and the answers flowing while connecting.
    for key, _ in sel.select(timeout=0):
        if key.fileobj.recv(4096): answered += 1
        sel.unregister(key.fileobj)
while answered < n:
    for key, _ in sel.select(timeout=30):
        if key.fileobj.recv(4096): answered += 1
        sel.unregister(key.fileobj)
open(ready, "w").write("%d\n" % answered)
open(done).read()  # hold every connection open until told
PY
client=$!
answered=$(cat "$work/ready")
sleep 1  # let the server settle (its fibers park, the poller blocks)
rss_after=$(rss_kib)
t0=$(cpu_ticks); s0=$(date +%s.%N)
sleep "$idle"
t1=$(cpu_ticks); s1=$(date +%s.%N)
echo done > "$work/done"; wait "$client"
hz=$(getconf CLK_TCK)
awk -v c="$conns" -v a="$answered" -v rb="$rss_before" -v ra="$rss_after" \
    -v t0="$t0" -v t1="$t1" -v s0="$s0" -v s1="$s1" -v hz="$hz" 'BEGIN {
  printf "connections %d (answered %d)\n", c, a
  printf "server RSS: %d KiB before, %d KiB with them: %.2f KiB per connection\n", rb, ra, (ra - rb) / c
  printf "idle CPU: %.4f CPU-s per s over %.1f s\n", (t1 - t0) / hz / (s1 - s0), s1 - s0 }'
