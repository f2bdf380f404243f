#!/usr/bin/env bash
# The HTTP example under a normal wrk load with and without hostile clients beside it
# (tools/http_attack_clients.py: slow-header clients, pipeliners that never read,
# connections reset mid-request), in one run on one machine. Prints the normal load's
# requests/s and p99 both ways and their ratio, the server's peak RSS and descriptors
# under attack, and whether its descriptors came back to the baseline after the
# attackers left (a leak check).
#
#   tools/http_attack_mix.sh
#   ATTACK_SLOW=500 ATTACK_PIPELINERS=20 ATTACK_RESETS=200 tools/http_attack_mix.sh
#
# Knobs: HTTP_CONNS (64), HTTP_SECS (10), HTTP_THREADS (2), WORKERS (2), PORT (18081),
# ATTACK_SLOW (200), ATTACK_PIPELINERS (10, each 256 KiB of requests, then an empty line a
# second), ATTACK_RESETS (50 a second),
# SERVER_FLAGS (extra http_server flags; default --header_timeout_ms=5000),
# HTTP_SERVER (a built http_server; default: build it with -c opt).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
conns=${HTTP_CONNS:-64} secs=${HTTP_SECS:-10} threads=${HTTP_THREADS:-2}
workers=${WORKERS:-2} port=${PORT:-18081}
slow=${ATTACK_SLOW:-200} pipeliners=${ATTACK_PIPELINERS:-10} resets=${ATTACK_RESETS:-50}
server_flags=${SERVER_FLAGS:---header_timeout_ms=5000}

command -v wrk >/dev/null || { echo "http_attack_mix: wrk is not installed" >&2; exit 2; }
cd "$repo" || exit 2
source tools/server_lib.sh
work=$(mktemp -d)
server=""
attack=""
trap '[ -n "$attack" ] && kill "$attack" 2>/dev/null; [ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
if [ -n "${HTTP_SERVER:-}" ]; then
  cp "$HTTP_SERVER" "$work/http_server" || exit 1
else
  ./bazelw build -c opt //examples/http_server >&2 || { echo "http_attack_mix: build failed" >&2; exit 1; }
  cp bazel-bin/examples/http_server/http_server "$work/http_server" || exit 1
fi

# shellcheck disable=SC2086  # server_flags is a list of flags
"$work/http_server" --listen="127.0.0.1:$port" --fiber_concurrency="$workers" \
  $server_flags >"$work/server.log" 2>&1 &
server=$!
wait_until_serving http_attack_mix "$server" "$work/server.log" "$port" || exit 1

fds() { find "/proc/$server/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l; }
rss_kib() { awk '/^VmRSS/{print $2}' "/proc/$server/status" 2>/dev/null; }
# wrk's requests/s and p99 (in ms).
run_wrk() {
  wrk -t"$threads" -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$port/" >"$1" 2>&1
  awk '/Requests\/sec/{rps=$2} /^ +99%/{p=$2; u=p; gsub(/[0-9.]/, "", u); gsub(/[a-z]/, "", p);
       if (u=="us") p/=1000; else if (u=="s") p*=1000; p99=p}
       /Socket errors/{$1=$1; errors=$0}
       END{printf "%s %.3f %s\n", rps, p99, (errors==""?"-":errors)}' "$1"
}

run_wrk "$work/warmup.txt" >/dev/null  # first connections, page faults, caches
base_fds=$(fds)
base_rss=$(rss_kib)
read -r base_rps base_p99 base_errors < <(run_wrk "$work/base.txt")

python3 "$repo/tools/http_attack_clients.py" --port="$port" --seconds=$((secs + 10)) \
  --slow="$slow" --pipeliners="$pipeliners" --resets_per_s="$resets" >"$work/attack.txt" 2>&1 &
attack=$!
# Let the slow clients open and the pipeliners fill their buffers first.
for _ in $(seq 50); do [ "$(fds)" -ge $((base_fds + slow / 2)) ] && break; sleep 0.1; done
peak_fds=0
peak_rss=0
( while kill -0 "$attack" 2>/dev/null; do
    echo "$(fds) $(rss_kib)"; sleep 0.2
  done ) >"$work/samples.txt" &
sampler=$!
read -r attack_rps attack_p99 attack_errors < <(run_wrk "$work/attack_wrk.txt")
wait "$attack"
attack=""
wait "$sampler" 2>/dev/null
read -r peak_fds peak_rss < <(awk '$1>f{f=$1} $2>r{r=$2} END{print f+0, r+0}' "$work/samples.txt")

# After the attackers left, the server's descriptors come back to the baseline
# (closed by the peers, or by the server's deadlines).
after_fds=$(fds)
for _ in $(seq 150); do
  after_fds=$(fds)
  [ "$after_fds" -le "$base_fds" ] && break
  sleep 0.2
done
after_rss=$(rss_kib)

kill -TERM "$server"
wait "$server"
status=$?
server=""

ratio=$(awk -v a="$attack_p99" -v b="$base_p99" 'BEGIN{printf "%.2f", (b>0 ? a/b : 0)}')
echo "wrk -t$threads -c$conns -d${secs}s; http_server --fiber_concurrency=$workers $server_flags"
echo "attackers: $slow slow-header clients (1 byte/s), $pipeliners pipeliners that never read, $resets resets/s"
printf '%-16s %12s %10s  %s\n' "load" "requests/s" "p99 (ms)" "wrk socket errors"
printf '%-16s %12s %10s  %s\n' "normal" "$base_rps" "$base_p99" "$base_errors"
printf '%-16s %12s %10s  %s\n' "under attack" "$attack_rps" "$attack_p99" "$attack_errors"
echo "p99 under attack / p99 without: ${ratio}x"
echo "server RSS: ${base_rss} KiB before, peak ${peak_rss} KiB under attack, ${after_rss} KiB after"
echo "server descriptors: ${base_fds} before, peak ${peak_fds} under attack, ${after_fds} after the attackers left"
cat "$work/attack.txt"
[ "$after_fds" -le "$base_fds" ] || echo "LEAK: descriptors did not come back to ${base_fds}"
echo "note: http_server exit_after_sigterm: $status"
