#!/usr/bin/env bash
# Many keep-alive connections to the HTTP example, measured by conn_load (conn_load.cc
# says what each figure is):
#
#   tools/conn_load/conn_load.sh              # 100,000 connections, 1% busy, on 2 workers
#   CONNS=20000 WORKERS=4 tools/conn_load/conn_load.sh
#   SIGTERM=1 tools/conn_load/conn_load.sh    # end with SIGTERM, all connections open
#   PACKED=.device/conn SERVER_CPUS=0-1 CLIENT_CPUS=2 tools/conn_load/conn_load.sh
#
# Knobs: CONNS (100000), BUSY (0.01), IDLE_SECS (10), BUSY_SECS (10), WORKERS (2),
# PORT (18086), SERVER_FLAGS for the server, SERVER_CPUS and CLIENT_CPUS (taskset CPU
# lists for the server and conn_load; default: no pinning). Builds both with -c opt,
# unless PACKED names a folder made by ../shared/tools/pack-binaries.sh from
# bazel-bin/examples/http_server/http_server and bazel-bin/tools/conn_load/conn_load (for
# a machine without Bazel or the libraries: the many-core machine, where root can raise
# the descriptor limit to 100,000). The server and the client each need CONNS + a few
# descriptors: the script raises its limits (root may raise the hard one). Prints
# conn_load's report and the server's exit status.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
conns=${CONNS:-100000}; busy=${BUSY:-0.01}; idle=${IDLE_SECS:-10}; busy_secs=${BUSY_SECS:-10}
workers=${WORKERS:-2}; port=${PORT:-18086}
packed=${PACKED:-}; server_cpus=${SERVER_CPUS:-}; client_cpus=${CLIENT_CPUS:-}
cd "$repo" || exit 2
if [ -n "$server_cpus$client_cpus" ] && ! command -v taskset >/dev/null; then
  echo "SERVER_CPUS/CLIENT_CPUS need taskset (util-linux), which is not installed" >&2
  exit 2
fi
if [ -n "$packed" ]; then
  for program in http_server conn_load; do
    if [ ! -x "$packed/bin/$program" ] || [ ! -x "$packed/run" ]; then
      echo "PACKED=$packed holds no $program: pack bazel-bin/examples/http_server/http_server" \
           "and bazel-bin/tools/conn_load/conn_load with ../shared/tools/pack-binaries.sh" >&2
      exit 2
    fi
  done
fi
need=$((conns + 64))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$need" ]; then
  # Raising the hard limit needs CAP_SYS_RESOURCE (root in most places; not in every
  # container: there, at most the hard limit's connections can be held).
  [ "$(ulimit -Hn)" != unlimited ] && [ "$(ulimit -Hn)" -lt "$need" ] && ulimit -Hn "$need" 2>/dev/null
  ulimit -n "$need" 2>/dev/null || {
    echo "CONNS=$conns needs $need descriptors per process; the hard limit is $(ulimit -Hn) and" \
         "cannot be raised here (no CAP_SYS_RESOURCE): use CONNS <= $(( $(ulimit -Hn) - 64 ))" >&2
    exit 2
  }
fi
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill -KILL "$server" 2>/dev/null; rm -rf "$work"' EXIT
if [ -n "$packed" ]; then
  server_program=("$packed/run" http_server)
  client_program=("$packed/run" conn_load)
else
  ./bazelw build -c opt //examples/http_server //tools/conn_load >&2 || { echo "build failed" >&2; exit 1; }
  # Copies: a later build elsewhere in this workspace may repoint bazel-bin meanwhile.
  cp bazel-bin/examples/http_server/http_server bazel-bin/tools/conn_load/conn_load "$work/" || exit 1
  server_program=("$work/http_server")
  client_program=("$work/conn_load")
fi
# taskset execs the program (and the packed run script execs it too), so $! below is
# the server itself, which conn_load watches and SIGTERM reaches.
[ -n "$server_cpus" ] && server_program=(taskset -c "$server_cpus" "${server_program[@]}")
[ -n "$client_cpus" ] && client_program=(taskset -c "$client_cpus" "${client_program[@]}")
mkfifo "$work/out"
# shellcheck disable=SC2086
"${server_program[@]}" --listen="127.0.0.1:$port" --fiber_concurrency="$workers" \
  --idle_timeout_ms=3600000 --max_connections=$((conns + 1000)) ${SERVER_FLAGS:-} \
  >"$work/out" 2>"$work/server.err" &
server=$!
exec 4<"$work/out"
read -t 30 -r line <&4 || { echo "the server did not start: $(tail -5 "$work/server.err")" >&2; exit 1; }
echo "server: $line (pid $server, $workers workers${server_cpus:+ on CPUs $server_cpus})"
sigterm=""; [ "${SIGTERM:-0}" = 1 ] && sigterm=--sigterm
"${client_program[@]}" --target="127.0.0.1:$port" --server_pid="$server" --connections="$conns" \
  --busy_fraction="$busy" --idle_secs="$idle" --busy_secs="$busy_secs" $sigterm
status=$?
[ -z "$sigterm" ] && kill -TERM "$server"
wait "$server"
echo "server_exit_status $?"
server=""
exit $status
