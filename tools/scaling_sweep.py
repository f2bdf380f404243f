#!/usr/bin/env python3
"""Runs Spindle's worker sweep and the peers' at the same worker counts; writes one JSON file.

  tools/scaling_sweep.py --out=docs/scaling.json [--workers=1,2,4]
      [--strategies=v1,v2,relaxed,globalfifo]
      [--workloads=spawn_join,yield,skynet,fib,mutex,sleep] [--repetitions=3] [--scale=1]
      [--spindle_bench=PATH] [--peers_build=DIR | --no_peers] [--machine=TEXT]
      [--note=TEXT ...] [-- extra spindle_bench flags]

One workload at a time, so that each of the chart's panels comes from one stretch of
time on a machine whose speed drifts: spindle_bench's sweep over every count and strategy
(--flagfile=configs/default.flags --format=json, each count as --fiber_concurrency), then
each peer (Go 1.19 goroutines, oneTBB task_group) that has the workload, each repetition
in a fresh process, GOMAXPROCS or PEERS_THREADS set to the count, the counts taking turns
within each repetition. Without --spindle_bench it builds spindle_bench with
`./bazelw build -c opt` first. tools/scaling_chart.py draws the file. Only stdlib Python;
nothing here uses the network.

The peers are ../shared/peers' programs, built by ../shared/peers/run_peers.sh into
/tmp/peers-build (--peers_build or $PEERS_BUILD elsewhere). A missing peer is reported on
stderr and left out; Spindle's rows are written regardless. The peers run at full size
only, so they are left out when --scale is not 1 (their wall times would not compare).

Output: one JSON object (not JSON lines), indented:
  "schema":   "spindle-scaling/1"
  "date":     when the sweep started, UTC, "2026-11-25T15:40:00Z"
  "machine":  {"description": "2-vCPU KVM VM" (or --machine), "cpu": the model name
              from /proc/cpuinfo with its family and model, "cpus": CPUs this process may
              use, "kernel": uname -r}; nothing that names the host
  "sweep":    {"workers": [1, 2, 4], "strategies": ["v1", "v2", "relaxed", "globalfifo"], "workloads": [...],
              "repetitions": 3, "scale": 1.0, "spindle_args": [extra flags]}
  "versions": {"spindle": git commit (+"-dirty"), "go": the Go that built gobench,
              "onetbb": Debian's libtbb12 version}; a version not found is null
  "load_average": {"start": [1, 5, 15 min], "end": [...]}: the machine's load average
              before the first run and after the last (other work competes for the CPUs)
  "cpu_use":  {"wall_s": the sweep's seconds, "sweep_cpus": CPUs the sweep's processes
              used on average, "other_cpus": CPUs everything else used on average (from
              /proc/stat's busy time less the sweep's), "steal_cpus": CPUs the hypervisor
              took}; null where /proc/stat cannot be read
  "notes":    [free text for the chart's caption: --note, peers left out, failures]
  "rows":     one object per (runtime, strategy, workload, metric, workers):
    "runtime":   "spindle", "go" or "onetbb"
    "strategy":  Spindle's scheduling strategy ("v1", "v2", "relaxed", "globalfifo"); null for the peers
    "workload":  spindle_bench's workload name (the peers' are mapped onto it)
    "metric", "unit":  spindle_bench's metric and unit (a peer's unit is checked to be
                 the same quantity: ns/task is ns per fiber)
    "workers":   the worker count (--fiber_concurrency, GOMAXPROCS, PEERS_THREADS)
    "value", "min", "max", "reps":  the median over the repetitions, their range, count
    "own_shape": true when the workload sets its own worker shape whatever the count
                 (yield: one worker; Go's yield_pingpong runs at GOMAXPROCS=1 to match)

Exit status: 0 when the file was written (peers may be missing: see "notes"), 1 when
spindle_bench failed, 2 for a bad option.
"""

import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCHEMA = "spindle-scaling/1"
DEFAULT_WORKLOADS = "spawn_join,yield,skynet,fib,mutex,sleep"
PEER_TIMEOUT_S = 120

# What each peer runs for a spindle_bench workload: its benchmark name, and for each line
# it prints (metric, unit) the spindle_bench metric and unit that line measures.
GO_WORKLOADS = {
    "spawn_join": ("spawn_join", {("spawn_join", "ns/task"): ("per_fiber", "ns")}),
    "yield": ("yield_pingpong", {("yield_pingpong", "ns/switch"): ("per_switch", "ns")}),
    "skynet": ("skynet", {("skynet", "ms"): ("wall", "ms")}),
    "fib": ("fib", {("fib", "ms"): ("wall", "ms")}),
    "mutex": ("mutex_contention", {("mutex_contention", "ns/lock"): ("per_lock", "ns")}),
    "sleep": ("sleep_timers", {("sleep_timers", "ms"): ("wall", "ms"),
                               ("sleep_timers_oversleep", "us"): ("mean_oversleep", "us")}),
}
TBB_WORKLOADS = {
    "spawn_join": ("spawn_join", {("spawn_join", "ns/task"): ("per_fiber", "ns")}),
    "skynet": ("skynet", {("skynet", "ms"): ("wall", "ms")}),
    "fib": ("fib", {("fib", "ms"): ("wall", "ms")}),
}
# The fields of a spindle_bench sweep row that the file keeps, in its order.
SPINDLE_FIELDS = ("strategy", "workload", "metric", "unit", "workers", "value", "min", "max",
                  "reps", "own_shape")
# Workloads that keep one shape at every worker count, and the count their peer runs at.
OWN_SHAPE_WORKERS = {"yield": 1}


class Peer:
    """One peer runtime: its row label, the name its program prints first on each result
    line, its binary, the variable that sets its worker count, its workload map."""

    def __init__(self, runtime, printed_name, binary, workers_env, workloads):
        self.runtime = runtime
        self.printed_name = printed_name
        self.binary = binary
        self.workers_env = workers_env
        self.workloads = workloads


def log(message):
    print("scaling_sweep: " + message, file=sys.stderr, flush=True)


def positive_ints(text):
    try:
        values = [int(part) for part in text.split(",")]
    except ValueError:
        values = []
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(
            "'%s' is not a list of worker counts: expected integers >= 1 such as 1,2,4" % text)
    return values


def names(text):
    values = text.split(",")
    if not all(values):
        raise argparse.ArgumentTypeError("'%s' has an empty name" % text)
    return values


def parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="scaling_sweep.py",
        description="Spindle's worker sweep beside Go's and oneTBB's, as one JSON file "
                    "for tools/scaling_chart.py.")
    parser.add_argument("--out", required=True, help="the JSON file to write; - for stdout")
    parser.add_argument("--workers", type=positive_ints, default=[1, 2, 4],
                        help="worker counts (default 1,2,4)")
    parser.add_argument("--strategies", type=names,
                        default=["v1", "v2", "relaxed", "globalfifo"],
                        help="Spindle's scheduling strategies (default v1,v2,relaxed,"
                        "globalfifo: seed 000's baseline, the floor every other beats)")
    parser.add_argument("--workloads", type=names, default=DEFAULT_WORKLOADS.split(","),
                        help="spindle_bench workloads (default %s)" % DEFAULT_WORKLOADS)
    parser.add_argument("--repetitions", type=int, default=3,
                        help="runs of each workload, and of each peer, per count (default 3)")
    parser.add_argument("--scale", type=float, default=1.0,
                        help="spindle_bench --scale (default 1; peers only at 1)")
    parser.add_argument("--spindle_bench", help="a built spindle_bench (default: build it)")
    parser.add_argument("--peers_build", default=os.environ.get("PEERS_BUILD", "/tmp/peers-build"),
                        help="folder with gobench and tbb_bench (default $PEERS_BUILD or "
                             "/tmp/peers-build)")
    parser.add_argument("--no_peers", action="store_true", help="Spindle's rows only")
    parser.add_argument("--machine", help="the machine, for the chart's title (default: "
                                          "'N-vCPU <hypervisor> VM' or 'N-CPU machine')")
    parser.add_argument("--note", action="append", default=[],
                        help="a line for the chart's caption (repeatable)")
    parser.add_argument("spindle_args", nargs="*", help="after --: more spindle_bench flags")
    args = parser.parse_args(argv)
    if args.repetitions < 1:
        parser.error("--repetitions=%d: must be at least 1" % args.repetitions)
    if not args.scale > 0:
        parser.error("--scale=%g: must be > 0" % args.scale)
    return args


def lscpu_field(name):
    try:
        text = subprocess.run(["lscpu"], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    match = re.search(r"^%s:\s*(.+)$" % re.escape(name), text, re.MULTILINE)
    return match.group(1).strip() if match else None


def machine_info(description):
    cpuinfo = {}
    try:
        with open("/proc/cpuinfo") as lines:
            for line in lines:
                key, _, value = line.partition(":")
                cpuinfo.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    cpu = cpuinfo.get("model name", "unknown CPU")
    if "cpu family" in cpuinfo and "model" in cpuinfo:
        cpu += " (family %s, model %s)" % (cpuinfo["cpu family"], cpuinfo["model"])
    cpus = len(os.sched_getaffinity(0))
    if description is None:
        hypervisor = lscpu_field("Hypervisor vendor")
        if hypervisor:
            description = "%d-vCPU %s VM" % (cpus, hypervisor)
        else:
            description = "%d-CPU machine" % cpus
    return {"description": description, "cpu": cpu, "cpus": cpus,
            "kernel": platform.release()}


def command_output(command, cwd=None):
    try:
        result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return result.stdout.strip() if result.returncode == 0 else None


def spindle_version():
    commit = command_output(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO)
    if commit and command_output(["git", "status", "--porcelain", "--untracked-files=no"],
                                 cwd=REPO):
        commit += "-dirty"
    return commit


def build_spindle_bench():
    log("building spindle_bench (./bazelw build -c opt //benchmarks:spindle_bench)")
    bazelw = os.path.join(REPO, "bazelw")
    build = subprocess.run([bazelw, "build", "-c", "opt", "//benchmarks:spindle_bench"],
                           cwd=REPO, stdout=sys.stderr)
    bin_dir = command_output([bazelw, "info", "-c", "opt", "bazel-bin"], cwd=REPO)
    if build.returncode != 0 or not bin_dir:
        sys.exit("scaling_sweep: building spindle_bench failed (status %d)" % build.returncode)
    return os.path.join(bin_dir, "benchmarks", "spindle_bench")


def run_spindle(args, bench, workload):
    """spindle_bench's rows for `workload` at every count under every strategy."""
    command = [bench, "--flagfile=" + os.path.join(REPO, "configs", "default.flags"),
               "--format=json", "--sweep_workers=" + ",".join(map(str, args.workers)),
               "--fiber_scheduling_strategy=" + ",".join(args.strategies),
               "--workloads=" + workload,
               "--repetitions=%d" % args.repetitions, "--scale=%g" % args.scale]
    command += args.spindle_args
    log("%s: %s" % (workload, " ".join(command)))
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True)
    if result.returncode != 0:
        sys.exit("scaling_sweep: spindle_bench exited with status %d: %s"
                 % (result.returncode, " ".join(command)))
    rows = []
    for number, line in enumerate(result.stdout.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            rows.append({"runtime": "spindle", **{key: row[key] for key in SPINDLE_FIELDS}})
        except json.JSONDecodeError as error:
            sys.exit("scaling_sweep: spindle_bench's line %d is not JSON (%s): %s"
                     % (number, error, line))
        except (KeyError, TypeError) as error:
            sys.exit("scaling_sweep: spindle_bench's line %d lacks %s: %s"
                     % (number, error, line))
    return rows


def run_peer_once(peer, benchmark, workers):
    """The (metric, unit) -> value lines of one run, or an error message."""
    env = dict(os.environ, **{peer.workers_env: str(workers)})
    command = [peer.binary, benchmark]
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True,
                                timeout=PEER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return None, "timed out after %d s" % PEER_TIMEOUT_S
    if result.returncode != 0:
        last = result.stderr.strip().splitlines()[-1:] or [""]
        return None, "exit status %d %s" % (result.returncode, last[0])
    values = {}
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) == 4 and fields[0] == peer.printed_name:
            try:
                values[(fields[1], fields[3])] = float(fields[2])
            except ValueError:
                return None, "a value that is not a number: %r" % line
    return values, None


def run_peer(peer, workload, counts, repetitions, notes):
    """The peer's rows for `workload` at each of `counts`. A count whose run fails is left
    out, with a line in `notes`."""
    benchmark, metrics = peer.workloads[workload]
    own_workers = OWN_SHAPE_WORKERS.get(workload)
    runs = {workers: [] for workers in counts}
    for _ in range(repetitions):
        for workers in [count for count in counts if count in runs]:
            values, error = run_peer_once(peer, benchmark, own_workers or workers)
            if error is None and not set(metrics) <= set(values):
                error = "no %s line in its output (%s)" % (
                    ", ".join("%s %s" % key for key in sorted(set(metrics) - set(values))),
                    ", ".join("%s %s" % key for key in sorted(values)) or "nothing")
            if error is not None:
                notes.append("%s %s at %d workers failed: %s"
                             % (peer.runtime, benchmark, workers, error))
                log(notes[-1])
                del runs[workers]
                continue
            runs[workers].append(values)
    rows = []
    for workers, done in runs.items():
        for key, (metric, unit) in metrics.items():
            values = [run[key] for run in done]
            rows.append({"runtime": peer.runtime, "strategy": None, "workload": workload,
                         "metric": metric, "unit": unit, "workers": workers,
                         "value": statistics.median(values), "min": min(values),
                         "max": max(values), "reps": len(values),
                         "own_shape": own_workers is not None})
    return rows


def find_peers(args, notes):
    if args.no_peers:
        notes.append("peers left out (--no_peers)")
        return []
    if args.scale != 1:
        notes.append("peers left out: they run at full size, Spindle at --scale=%g" % args.scale)
        log(notes[-1])
        return []
    peers = []
    for runtime, printed_name, name, env, workloads in (
            ("go", "go", "gobench", "GOMAXPROCS", GO_WORKLOADS),
            ("onetbb", "tbb", "tbb_bench", "PEERS_THREADS", TBB_WORKLOADS)):
        binary = os.path.join(args.peers_build, name)
        if os.access(binary, os.X_OK):
            peers.append(Peer(runtime, printed_name, binary, env, workloads))
        else:
            notes.append("%s left out: no %s (build it with ../shared/peers/run_peers.sh, "
                         "or pass --peers_build)" % (runtime, binary))
            log(notes[-1])
    return peers


def peer_versions(peers):
    versions = {"go": None, "onetbb": None}
    for peer in peers:
        if peer.runtime == "go" and shutil.which("go"):
            text = command_output(["go", "version", peer.binary])
            versions["go"] = text.split(":")[-1].strip() if text else None
        if peer.runtime == "onetbb":
            versions["onetbb"] = command_output(["dpkg-query", "-W", "-f=${Version}", "libtbb12"])
    return versions


def cpu_use_now():
    """(time, machine busy seconds, steal seconds, this process's and its children's CPU
    seconds); busy and steal are None without /proc/stat."""
    busy = steal = None
    try:
        with open("/proc/stat") as stat:
            fields = [int(field) for field in stat.readline().split()[1:]]
        ticks = os.sysconf("SC_CLK_TCK")
        # user nice system idle iowait irq softirq steal (guest time is inside user).
        busy = (fields[0] + fields[1] + fields[2] + fields[5] + fields[6]) / ticks
        steal = fields[7] / ticks
    except (OSError, ValueError, IndexError):
        pass
    own = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        own += usage.ru_utime + usage.ru_stime
    return datetime.datetime.now().timestamp(), busy, steal, own


def cpu_use_since(start):
    """The "cpu_use" object from `start` (cpu_use_now()) until now, or None."""
    end = cpu_use_now()
    wall = end[0] - start[0]
    if start[1] is None or end[1] is None or wall <= 0:
        return None
    sweep = end[3] - start[3]
    return {"wall_s": round(wall, 1), "sweep_cpus": round(sweep / wall, 2),
            "other_cpus": round(max(0.0, end[1] - start[1] - sweep) / wall, 2),
            "steal_cpus": round((end[2] - start[2]) / wall, 2)}


def to_json(document):
    """`document` as JSON text: a line per metadata key and a line per row."""
    fields = ['  %s: %s' % (json.dumps(key), json.dumps(value))
              for key, value in document.items() if key != "rows"]
    rows = ",\n".join("    " + json.dumps(row) for row in document["rows"])
    return "{\n%s,\n  \"rows\": [\n%s\n  ]\n}\n" % (",\n".join(fields), rows)


def main(argv):
    args = parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    notes = list(args.note)
    bench = args.spindle_bench or build_spindle_bench()
    if not os.access(bench, os.X_OK):
        log("--spindle_bench=%s: not an executable file" % bench)
        return 2
    peers = find_peers(args, notes)
    load_start = [round(load, 2) for load in os.getloadavg()]
    use_start = cpu_use_now()
    rows = []
    for workload in args.workloads:
        rows += run_spindle(args, bench, workload)
        for peer in [peer for peer in peers if workload in peer.workloads]:
            log("%s: %s at %s workers" % (workload, peer.runtime,
                                           ",".join(map(str, args.workers))))
            rows += run_peer(peer, workload, args.workers, args.repetitions, notes)
    versions = {"spindle": spindle_version()}
    versions.update(peer_versions(peers))
    document = {
        "schema": SCHEMA,
        "date": started.isoformat().replace("+00:00", "Z"),
        "machine": machine_info(args.machine),
        "sweep": {"workers": args.workers, "strategies": args.strategies,
                  "workloads": args.workloads, "repetitions": args.repetitions,
                  "scale": args.scale, "spindle_args": args.spindle_args},
        "versions": versions,
        "load_average": {"start": load_start,
                         "end": [round(load, 2) for load in os.getloadavg()]},
        "cpu_use": cpu_use_since(use_start),
        "notes": notes,
        "rows": rows,
    }
    text = to_json(document)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w") as out:
            out.write(text)
    log("wrote %s: %d rows" % (args.out, len(rows)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
