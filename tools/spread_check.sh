#!/usr/bin/env bash
# Where the HTTP example's connections run: starts examples/http_server with many
# workers in several scheduling groups over a (by default fake) two-node topology, loads
# it with wrk, then reads its /metrics and prints, per scheduling group, its NUMA node,
# the connections' fibers it started, the fiber runs its workers made and the events
# its reactor returned, each with its share of the total; wrk's requests/s, p50 and p99
# above them. Exits 1 if a group started none of the connections (ServerOptions::
# spread_connections is meant to give every group its share; docs/performance.md,
# "Where accepted connections run").
#
#   tools/spread_check.sh                        # 16 workers, groups of 4, two nodes
#   PACKED=.device/spread WRK=.device/wrk SERVER_CPUS=0-7 WRK_CPUS=8-15 tools/spread_check.sh
#
# Knobs: WORKERS (16), GROUP_SIZE (4), TOPOLOGY (--fiber_numa_topology_override,
# "0:0-7;1:8-15"; "" for the machine's own), CONNS (256), SECS (10), THREADS (wrk -t, 2),
# PORT (18087), SERVER_FLAGS (more flags for the server), SERVER_CPUS and WRK_CPUS
# (taskset CPU lists; default: no pinning), WRK (the wrk to run, default: wrk on the
# PATH), PACKED (a folder made by ../shared/tools/pack-binaries.sh from
# bazel-bin/examples/http_server/http_server: no build, for a machine without Bazel or
# the libraries). Needs bash, awk and wrk; no curl or python (the metrics are read over
# bash's /dev/tcp).
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
workers=${WORKERS:-16}; group_size=${GROUP_SIZE:-4}; topology=${TOPOLOGY-0:0-7;1:8-15}
conns=${CONNS:-256}; secs=${SECS:-10}; threads=${THREADS:-2}; port=${PORT:-18087}
server_cpus=${SERVER_CPUS:-}; wrk_cpus=${WRK_CPUS:-}; wrk=${WRK:-wrk}; packed=${PACKED:-}
cd "$repo" || exit 2
source tools/server_lib.sh
command -v "$wrk" >/dev/null || { echo "spread_check: no wrk at '$wrk' (WRK=path)" >&2; exit 2; }
if [ -n "$server_cpus$wrk_cpus" ] && ! command -v taskset >/dev/null; then
  echo "spread_check: SERVER_CPUS/WRK_CPUS need taskset (util-linux), which is not installed" >&2
  exit 2
fi
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill -KILL "$server" 2>/dev/null; rm -rf "$work"' EXIT
if [ -n "$packed" ]; then
  if [ ! -x "$packed/bin/http_server" ] || [ ! -x "$packed/run" ]; then
    echo "spread_check: PACKED=$packed holds no http_server: pack" \
         "bazel-bin/examples/http_server/http_server with ../shared/tools/pack-binaries.sh" >&2
    exit 2
  fi
  server_program=("$packed/run" http_server)
else
  ./bazelw build -c opt //examples/http_server >&2 || { echo "spread_check: build failed" >&2; exit 1; }
  cp bazel-bin/examples/http_server/http_server "$work/" || exit 1
  server_program=("$work/http_server")
fi
# taskset execs the program (and the packed run script execs it too): $! is the server.
[ -n "$server_cpus" ] && server_program=(taskset -c "$server_cpus" "${server_program[@]}")
wrk_program=("$wrk")
[ -n "$wrk_cpus" ] && wrk_program=(taskset -c "$wrk_cpus" "$wrk")

server_flags=(--listen="127.0.0.1:$port" --fiber_concurrency="$workers"
              --fiber_scheduling_group_size="$group_size" --fiber_log_layout=true
              --debug_endpoints)
[ -n "$topology" ] &&
  server_flags+=(--fiber_numa_topology_override="$topology" --fiber_numa_aware=true)
# shellcheck disable=SC2086
"${server_program[@]}" "${server_flags[@]}" ${SERVER_FLAGS:-} >"$work/server.out" 2>"$work/server.err" &
server=$!

get() {  # get PATH: the body of GET PATH from the server (bash's /dev/tcp; no curl needed)
  local response
  exec 3<>"/dev/tcp/127.0.0.1/$port" || return 1
  printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$1" >&3
  response=$(cat <&3)
  exec 3<&-
  printf '%s\n' "${response#*$'\r\n\r\n'}"
}
wait_until_serving spread_check "$server" "$work/server.err" "$port" || exit 1
get /metrics >"$work/before.txt"
"${wrk_program[@]}" -t"$threads" -c"$conns" -d"${secs}s" --latency "http://127.0.0.1:$port/" \
  >"$work/wrk.txt" 2>&1
get /metrics >"$work/after.txt"
kill -TERM "$server"
wait "$server"
status=$?
server=""

# The layout line: "... g0=node0:4w@0-7 g1=node0:4w@0-7 g2=node1:4w@8-15 ...".
layout=$(grep -m1 'Spindle runtime:' "$work/server.err" "$work/server.out" 2>/dev/null | head -1)
layout=${layout#*:}
echo "${layout# }"
echo "wrk -t$threads -c$conns -d${secs}s: $(awk '/Requests\/sec/{r=$2} /^ +50%/{p50=$2}
  /^ +99%/{p99=$2} END {printf "%s req/s, p50 %s, p99 %s", r, p50, p99}' "$work/wrk.txt")"
echo "server exit status after SIGTERM: $status"
awk -v layout="$layout" -v before="$work/before.txt" -v after="$work/after.txt" '
  # metric{group="N"} VALUE lines; the difference between the two snapshots.
  function take(file, sign,   line, name, group) {
    while ((getline line < file) > 0) {
      if (line !~ /^spindle_(fibers_started_total|fiber_runs_total|reactor_events_total)\{group="/) continue
      name = line; sub(/\{.*/, "", name)
      group = line; sub(/^[^"]*"/, "", group); sub(/".*/, "", group)
      split(line, parts, " ")
      value[name, group] += sign * parts[2]
      if (!(group in seen)) { seen[group] = 1; groups[++count] = group }
    }
    close(file)
  }
  BEGIN {
    n = split(layout, words, " ")
    for (i = 1; i <= n; ++i) {
      if (words[i] ~ /^g[0-9]+=node[0-9]+:/) {
        g = words[i]; sub(/^g/, "", g); sub(/=.*/, "", g)
        node = words[i]; sub(/^g[0-9]+=node/, "", node); sub(/:.*/, "", node)
        node_of[g] = node
      }
    }
    take(before, -1); take(after, 1)
    split("fibers_started_total fiber_runs_total reactor_events_total", names, " ")
    for (k = 1; k <= 3; ++k) for (i = 1; i <= count; ++i) total[k] += value["spindle_" names[k], groups[i]]
    printf "%-6s %-5s %22s %22s %22s\n", "group", "node", "fibers started", "fiber runs", "reactor events"
    empty = 0
    for (i = 1; i <= count; ++i) {
      g = groups[i]
      printf "%-6s %-5s", g, (g in node_of) ? node_of[g] : "?"
      for (k = 1; k <= 3; ++k) {
        v = value["spindle_" names[k], g]
        printf " %14d (%4.1f%%)", v, (total[k] > 0 ? 100 * v / total[k] : 0)
      }
      printf "\n"
      if (value["spindle_fibers_started_total", g] == 0) ++empty
    }
    if (count == 0) { print "spread_check: no per-group metrics in /metrics"; exit 1 }
    if (empty > 0) { printf "spread_check: %d of %d groups started no connection\n", empty, count; exit 1 }
    printf "every group started a share of the connections (%d groups)\n", count
  }'
verdict=$?
[ $status -eq 0 ] || { echo "spread_check: the server exited with $status after SIGTERM:" >&2; tail -5 "$work/server.err" >&2; exit 1; }
exit $verdict
