#!/usr/bin/env bash
# Measures examples/http_server against Go net/http and nginx in one run on one machine
# (this VM's speed drifts over a day: only same-run ratios compare) and prints one table:
# requests/s, p50 and p99 per server, and Spindle's requests/s as a ratio to each peer.
#
#   tools/http_bench.sh
#   HTTP_CONNS=512 HTTP_SECS=20 SERVER_CPUS=0 WRK_CPUS=1 tools/http_bench.sh
#
# Builds //examples/http_server with -c opt, runs it with --fiber_concurrency=$WORKERS
# (default 2, as GOMAXPROCS=2 and 2 nginx workers in the peers script), loads it with
# `wrk -t$HTTP_THREADS -c$HTTP_CONNS -d${HTTP_SECS}s --latency`, stops it with SIGTERM
# (it must drain and exit 0), then runs ../shared/peers/run_http_peers.sh with the same
# knobs. Knobs: HTTP_CONNS (256), HTTP_SECS (10), HTTP_THREADS (2), SERVER_CPUS and
# WRK_CPUS (taskset CPU lists; default: no pinning), WORKERS (2), PORT (18080),
# SKIP_PEERS=1 (Spindle only).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
peers_script=$repo/../shared/peers/run_http_peers.sh
export HTTP_CONNS=${HTTP_CONNS:-256} HTTP_SECS=${HTTP_SECS:-10} HTTP_THREADS=${HTTP_THREADS:-2}
export SERVER_CPUS=${SERVER_CPUS:-} WRK_CPUS=${WRK_CPUS:-}
workers=${WORKERS:-2}
port=${PORT:-18080}

command -v wrk >/dev/null || { echo "http_bench: wrk is not installed" >&2; exit 2; }
cd "$repo" || exit 2
source tools/server_lib.sh
./bazelw build -c opt //examples/http_server >&2 || { echo "http_bench: build failed" >&2; exit 1; }
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
# A copy: a later build elsewhere in this workspace may repoint bazel-bin meanwhile.
cp bazel-bin/examples/http_server/http_server "$work/http_server" || exit 1

pin() {  # pin CPUS CMD...: runs CMD (in the foreground) under taskset when CPUS is set
  local cpus=$1; shift
  if [ -n "$cpus" ]; then taskset -c "$cpus" "$@"; else "$@"; fi
}

# Prints "NAME rps|p50|p99|errors|non2xx VALUE" lines from wrk's output on stdin.
parse_wrk() {
  awk -v n="$1" '/Requests\/sec/{print n, "rps", $2} /^ +50%/{print n, "p50", $2}
    /^ +99%/{print n, "p99", $2} /Socket errors/{$1=$1; print n, "errors", $0}
    /Non-2xx/{print n, "non2xx", $NF}'
}

# Started directly (taskset execs it), so that $! is the server itself for the SIGTERM.
server_cmd=("$work/http_server" --listen="127.0.0.1:$port" --fiber_concurrency="$workers")
[ -n "$SERVER_CPUS" ] && server_cmd=(taskset -c "$SERVER_CPUS" "${server_cmd[@]}")
"${server_cmd[@]}" >"$work/server.log" 2>&1 &
server=$!
wait_until_serving http_bench "$server" "$work/server.log" "$port" || exit 1
pin "$WRK_CPUS" wrk -t"$HTTP_THREADS" -c"$HTTP_CONNS" -d"${HTTP_SECS}s" --latency \
  "http://127.0.0.1:$port/" >"$work/wrk.txt" 2>&1
parse_wrk spindle <"$work/wrk.txt" >"$work/results.txt"
kill -TERM "$server"
wait "$server"
status=$?
server=""
echo "spindle exit_after_sigterm $status" >>"$work/results.txt"
if [ $status -ne 0 ]; then
  echo "http_bench: http_server exited with $status after SIGTERM (expected 0):" >&2
  cat "$work/server.log" >&2
fi
if ! grep -q "^spindle rps" "$work/results.txt"; then
  echo "http_bench: no figures from wrk:" >&2
  cat "$work/wrk.txt" >&2
  exit 1
fi

if [ "${SKIP_PEERS:-0}" != 1 ]; then
  if [ -x "$peers_script" ] || [ -f "$peers_script" ]; then
    bash "$peers_script" 2>"$work/peers.err" |
      awk '{print $1, $2, $3}' >>"$work/results.txt"
  else
    echo "http_bench: no peers script at $peers_script" >&2
  fi
fi

python3 - "$work/results.txt" "$workers" <<'PY'
import sys, os
path, workers = sys.argv[1], sys.argv[2]
rows, notes = {}, []
for line in open(path):
    parts = line.split(None, 2)
    if len(parts) < 3:
        continue
    name, metric, value = parts
    value = value.strip()
    if metric in ('errors', 'non2xx', 'exit_after_sigterm'):
        notes.append('%s %s: %s' % (name, metric, value))
    else:
        rows.setdefault(name, {})[metric] = value
env = os.environ
print('wrk -t%s -c%s -d%ss --latency; spindle --fiber_concurrency=%s; SERVER_CPUS=%s WRK_CPUS=%s'
      % (env['HTTP_THREADS'], env['HTTP_CONNS'], env['HTTP_SECS'], workers,
         env.get('SERVER_CPUS') or 'all', env.get('WRK_CPUS') or 'all'))
print('%-12s %14s %10s %10s %16s' % ('server', 'requests/s', 'p50', 'p99', 'spindle / this'))
spindle = float(rows.get('spindle', {}).get('rps', 0) or 0)
for name in ['spindle', 'go_nethttp', 'nginx']:
    r = rows.get(name)
    if not r:
        print('%-12s %14s %10s %10s %16s' % (name, 'n/a', '-', '-', '-'))
        continue
    rps = float(r.get('rps', 0) or 0)
    ratio = '%.2fx' % (spindle / rps) if rps > 0 and name != 'spindle' else '-'
    print('%-12s %14.0f %10s %10s %16s' % (name, rps, r.get('p50', '-'), r.get('p99', '-'), ratio))
for note in notes:
    print('note: ' + note)
PY
if [ -s "$work/peers.err" ] &&
  { ! grep -q "^go_nethttp rps" "$work/results.txt" || ! grep -q "^nginx rps" "$work/results.txt"; }; then
  echo "http_bench: the peers script printed:" >&2
  tail -5 "$work/peers.err" >&2
fi
