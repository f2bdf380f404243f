#!/usr/bin/env bash
# Memory exhaustion, as an operator would meet it: examples/http_server under an
# address-space limit (ulimit -v) and a burst of wrk connections well past the stacks
# that fit. The server must refuse the excess (counted), keep answering the connections
# it holds, recover when the burst ends, and drain and exit 0 on SIGTERM.
#
#   tools/address_space_check.sh              # ulimit -v 600000, 3000 connections, 8 s
#   LIMIT_KIB=800000 CONNS=5000 tools/address_space_check.sh
#
# Knobs: LIMIT_KIB (600000), CONNS (3000), BURST_SECS (8), PORT (18081), ADMIN_PORT
# (19091). Needs wrk (apt-get install wrk) and curl. Exits 1 if the server died, counted
# no refusal, answered nothing during or after the burst, or did not exit 0.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
limit=${LIMIT_KIB:-600000}; conns=${CONNS:-3000}; secs=${BURST_SECS:-8}
port=${PORT:-18081}; admin=${ADMIN_PORT:-19091}
cd "$repo" || exit 2
source tools/server_lib.sh
command -v wrk >/dev/null || { echo "needs wrk (apt-get install wrk)" >&2; exit 2; }
ulimit -n "$(ulimit -Hn)" || true
./bazelw build -c opt //examples/http_server >&2 || { echo "build failed" >&2; exit 1; }
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
cp bazel-bin/examples/http_server/http_server "$work/http_server" || exit 1
# The limit binds the server only (a subshell sets it, then execs the server).
( ulimit -v "$limit" && exec "$work/http_server" --listen="127.0.0.1:$port" \
    --admin_listen="127.0.0.1:$admin" --fiber_pools=default:auto,admin:1 \
    --admin_pool=admin --idle_timeout_ms=600000 ) >"$work/server.log" 2>&1 &
server=$!
wait_until_serving address_space_check "$server" "$work/server.log" "$admin" || exit 1
metric() { curl -s -m 5 "127.0.0.1:$admin/metrics" | awk -v m="$1" '$1 == m {print $2}'; }
wrk -t2 -c"$conns" -d"${secs}s" "http://127.0.0.1:$port/" >"$work/burst.txt" 2>&1
burst_requests=$(awk '/requests in/{print $1}' "$work/burst.txt")
refused_stack=$(metric 'spindle_pool_refused_total{pool="default",cause="stack"}')
refused_conns=$(metric 'spindle_http_connections_refused_by_pool_total')
wrk -t2 -c100 -d3s "http://127.0.0.1:$port/" >"$work/after.txt" 2>&1
after_rps=$(awk '/Requests\/sec/{print $2}' "$work/after.txt")
alive=no; kill -0 "$server" 2>/dev/null && alive=yes
kill -TERM "$server"; wait "$server"; code=$?; server=""
echo "address_space_check: ulimit -v $limit KiB, burst of $conns connections for ${secs}s"
echo "  during the burst: ${burst_requests:-0} requests answered; refused for lack of stacks:" \
     "${refused_stack:-0} starts, ${refused_conns:-0} connections"
echo "  after the burst (100 connections, 3 s): ${after_rps:-0} requests/s"
echo "  server alive after the burst: $alive; exit status on SIGTERM: $code"
grep -m1 "no stack for a new fiber" "$work/server.log" | sed 's/^/  first refusal: /'
ok=1
[ "$alive" = yes ] && [ "$code" = 0 ] && [ "${refused_conns:-0}" -gt 0 ] \
  && [ "${burst_requests:-0}" -gt 0 ] && [ "${after_rps%.*}" -gt 0 ] 2>/dev/null && ok=0
[ "$ok" = 0 ] && echo "address_space_check: PASS" || echo "address_space_check: FAIL"
exit "$ok"
