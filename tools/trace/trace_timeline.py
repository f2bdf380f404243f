#!/usr/bin/python3
# Copyright 2026 The Spindle Authors.
"""Draws a scheduling trace (runtime/trace.h, Chrome trace-event JSON) as a PNG timeline.

Usage: trace_timeline.py TRACE.json OUT.png [--from-us T] [--to-us T] [--arrows N]

One row per thread (workers, timer threads, reactors, plain threads), time across: each
fiber run a bar in its fiber's colour (so a fiber that moves between workers keeps it),
idle sleeps pale grey, timer rounds, polls and wake-ups made outside a run dark. Up to
--arrows wake-ups and spawns (200 by default) are drawn as thin lines from where they
were made to the run they caused. For the whole trace, open the JSON in Perfetto
(ui.perfetto.dev) or chrome://tracing: this is a quick look that fits in a document.
Needs matplotlib (Debian's python3-matplotlib, which ./bazelw installs).
"""

import argparse
import collections
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

CAT_COLORS = {"idle": "#dddddd", "timer": "#444444", "poll": "#8b0000", "wake": "#222222",
              "spawn": "#222222"}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("trace")
    parser.add_argument("png")
    parser.add_argument("--from-us", type=float, default=None)
    parser.add_argument("--to-us", type=float, default=None)
    parser.add_argument("--arrows", type=int, default=200)
    args = parser.parse_args()
    try:
        with open(args.trace) as f:
            events = json.load(f)["traceEvents"]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit("trace_timeline: cannot read %s as a trace: %s" % (args.trace, error))
    if args.from_us is not None and args.to_us is not None and args.from_us >= args.to_us:
        sys.exit("trace_timeline: --from-us=%g must be below --to-us=%g"
                 % (args.from_us, args.to_us))

    names, order = {}, {}
    bars = collections.defaultdict(list)
    starts, ends = {}, {}
    for e in events:
        if e.get("ph") == "M" and e.get("name") == "thread_name":
            names[e["tid"]] = e["args"]["name"]
        elif e.get("ph") == "M" and e.get("name") == "thread_sort_index":
            order[e["tid"]] = e["args"]["sort_index"]
        elif e.get("ph") == "X":
            bars[e["tid"]].append(e)
        elif e.get("ph") == "s":
            starts[e["id"]] = e
        elif e.get("ph") == "f":
            ends[e["id"]] = e
    if not bars:
        sys.exit("trace_timeline: %s has no slices to draw" % args.trace)
    lo = args.from_us if args.from_us is not None else min(
        e["ts"] for track in bars.values() for e in track)
    hi = args.to_us if args.to_us is not None else max(
        e["ts"] + e["dur"] for track in bars.values() for e in track)
    tids = sorted(bars, key=lambda t: (order.get(t, 1 << 30), t))
    row = {tid: i for i, tid in enumerate(tids)}
    palette = plt.get_cmap("tab20").colors

    fig, ax = plt.subplots(figsize=(14, 1.0 + 0.45 * len(tids)), dpi=110)
    for tid in tids:
        spans, colors = [], []
        for e in bars[tid]:
            if e["ts"] + e["dur"] < lo or e["ts"] > hi:
                continue
            spans.append((e["ts"], max(e["dur"], (hi - lo) / 4000.0)))
            if e.get("cat") == "run":
                colors.append(palette[e["args"]["fiber"] % len(palette)])
            else:
                colors.append(CAT_COLORS.get(e.get("cat"), "#999999"))
        ax.broken_barh(spans, (row[tid] - 0.35, 0.7), facecolors=colors, linewidth=0)
    drawn = 0
    for flow_id, start in starts.items():
        end = ends.get(flow_id)
        if end is None or drawn >= args.arrows:
            continue
        if not (lo <= start["ts"] <= hi and lo <= end["ts"] <= hi):
            continue
        if start["tid"] not in row or end["tid"] not in row:
            continue
        ax.plot([start["ts"], end["ts"]], [row[start["tid"]], row[end["tid"]]],
                color="#1f77b4" if start["cat"] == "wake" else "#2ca02c", linewidth=0.5,
                alpha=0.6)
        drawn += 1
    ax.set_yticks(range(len(tids)))
    ax.set_yticklabels([names.get(t, str(t)) for t in tids], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(lo, hi)
    ax.set_xlabel("microseconds from the first record")
    ax.set_title("Spindle scheduling trace: runs (a colour per fiber), sleeps (grey), "
                 "wake-ups (blue) and spawns (green)", fontsize=9)
    fig.tight_layout()
    fig.savefig(args.png)
    print("trace_timeline: wrote %s (%d threads, %d arrows)" % (args.png, len(tids), drawn))


if __name__ == "__main__":
    main()
