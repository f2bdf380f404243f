#!/usr/bin/python3
# Copyright 2026 The Spindle Authors.
"""Checks a scheduling trace (runtime/trace.h) against what it must be.

Usage: trace_check.py TRACE.json [METRICS_LINE]

- It parses as JSON, an object with "traceEvents".
- On each thread's track, the slices ("X") never overlap.
- Every fiber run is preceded by what made it runnable: a flow (a wake-up or a spawn)
  bound to the run, or the fiber's previous run ending in a yield. (A fiber that
  existed before the window and was never spawned in it is let off its first run.)
- With METRICS_LINE ("metrics fibers_run=N fibers_started=N timers_fired=N steals=N
  ..."), the runtime's metrics over the window: the trace's runs, spawns, timers fired
  and steals match them exactly.
Prints what it counted; exits 1 naming the first problem.
"""

import collections
import json
import sys

TOLERANCE_US = 0.002  # times are written with 3 decimals


def fail(message):
    sys.stderr.write("trace_check: FAIL: %s\n" % message)
    sys.exit(1)


def check(path, metrics_line=None):
    with open(path) as f:
        try:
            trace = json.load(f)
        except ValueError as error:
            fail("%s is not JSON: %s" % (path, error))
    events = trace.get("traceEvents")
    if not isinstance(events, list):
        fail("%s has no traceEvents list" % path)

    slices = collections.defaultdict(list)
    flows_by_id = {}
    flow_ends = collections.defaultdict(list)  # (tid, ts) -> flow ids
    counts = collections.Counter()
    for event in events:
        ph = event.get("ph")
        if ph == "X":
            slices[event["tid"]].append(event)
            if event.get("cat") == "run":
                counts["runs"] += 1
            if event.get("cat") == "timer":
                counts["timers"] += event["args"]["fired"]
        elif ph == "s":
            flows_by_id[event["id"]] = event
            counts[event["cat"] + "s"] += 1
        elif ph == "f":
            flow_ends[(event["tid"], round(event["ts"], 3))].append(event["id"])
        elif ph == "i":
            if event.get("cat") == "timer":
                counts["timers"] += event["args"]["fired"]
            if event.get("cat") == "steal":
                counts["steals"] += event["args"]["fibers"]

    for tid, track in slices.items():
        track.sort(key=lambda e: (e["ts"], e["dur"]))
        for before, after in zip(track, track[1:]):
            if before["ts"] + before["dur"] > after["ts"] + TOLERANCE_US:
                fail("on thread %s, %s at %.3f us (%.3f us long) overlaps %s at %.3f us"
                     % (tid, before["name"], before["ts"], before["dur"], after["name"],
                        after["ts"]))

    spawned = set(e["args"]["fiber"] for e in flows_by_id.values() if e["cat"] == "spawn")
    runs_by_fiber = collections.defaultdict(list)
    for tid, track in slices.items():
        for event in track:
            if event.get("cat") == "run":
                runs_by_fiber[event["args"]["fiber"]].append(event)
    for fiber, runs in runs_by_fiber.items():
        runs.sort(key=lambda e: e["ts"])
        for n, run in enumerate(runs):
            bound = [flows_by_id[i] for i in flow_ends.get((run["tid"], round(run["ts"], 3)), [])
                     if i in flows_by_id and flows_by_id[i]["args"]["fiber"] == fiber]
            if any(start["ts"] <= run["ts"] + TOLERANCE_US for start in bound):
                continue
            if n > 0 and runs[n - 1]["args"]["ended"] == "yield":
                continue
            if n == 0 and fiber not in spawned:
                continue  # started before the window
            fail("fiber %d's run at %.3f us on thread %s follows no spawn, wake-up or yield"
                 % (fiber, run["ts"], run["tid"]))

    print("trace_check: %d events, %d threads, %d runs, %d spawns, %d wake-ups, "
          "%d timers fired, %d stolen; slices never overlap; every run has its cause"
          % (len(events), len(slices), counts["runs"], counts["spawns"], counts["wakes"],
             counts["timers"], counts["steals"]))

    if metrics_line:
        fields = dict(item.split("=") for item in metrics_line.split()[1:])
        expected = {"runs": int(fields["fibers_run"]), "spawns": int(fields["fibers_started"]),
                    "timers": int(fields["timers_fired"]), "steals": int(fields["steals"])}
        for name, value in expected.items():
            if counts[name] != value:
                fail("the trace has %d %s; the runtime's metrics over the window say %d"
                     % (counts[name], name, value))
        print("trace_check: runs, spawns, timers and steals match the metrics: %s"
              % ", ".join("%s=%d" % item for item in sorted(expected.items())))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        fail("usage: trace_check.py TRACE.json [METRICS_LINE]")
    check(sys.argv[1], sys.argv[2] if len(sys.argv) == 3 else None)
