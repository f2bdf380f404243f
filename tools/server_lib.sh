# shellcheck shell=bash
# Shell functions the load tools share (http_bench.sh, http_attack_mix.sh,
# http_idle_bench.sh, address_space_check.sh, spread_check.sh): sourced, not run.

# wait_until_serving NAME PID LOG PORT: waits, 10 s at most, until 127.0.0.1:PORT
# accepts a connection (bash's /dev/tcp: no curl needed). If process PID exits first or
# the time runs out, prints "NAME: the server did not answer on port PORT:" and LOG to
# stderr and returns 1.
wait_until_serving() {
  local name=$1 pid=$2 log=$3 port=$4
  for _ in $(seq 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.05
  done
  echo "$name: the server did not answer on port $port:" >&2
  cat "$log" >&2
  return 1
}
