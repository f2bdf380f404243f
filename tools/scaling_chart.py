#!/usr/bin/python3
"""Draws tools/scaling_sweep.py's JSON as a PNG: one panel per workload, time against workers.

  tools/scaling_chart.py SWEEP.json OUT.png

Each panel is one workload's headline metric (the first metric its rows name, as in
spindle_bench's table: spawn_join ns per fiber, skynet ms, ...): the worker count on the x
axis (log 2), the median on a log y axis, a bar from the fastest to the slowest
repetition, and one line per runtime and strategy in the file (Spindle v1, Spindle v2,
Go, oneTBB). The title names the machine and the date from the file's "machine" and
"date"; worker counts above the machine's CPUs are shaded (they oversubscribe it).
A workload that sets its own worker shape (yield: one worker) says so in its panel.

Uses Debian's python3-matplotlib (hence /usr/bin/python3), Agg backend, no display.
Exit status: 0 with two lines on stdout, what was drawn and the title; 1 with a message
on stderr that names the file and the value (a missing file, malformed JSON, no rows, a
bad row, an output that cannot be written); 2 for a wrong number of arguments.
"""

import importlib.util
import json
import math
import sys

RUNTIME_LABELS = {"spindle": "Spindle", "go": "Go", "onetbb": "oneTBB"}
RUNTIME_ORDER = ["spindle", "go", "onetbb"]
ROW_FIELDS = {"runtime": str, "workload": str, "metric": str, "unit": str,
              "workers": int, "value": (int, float)}
PANEL_COLUMNS = 3


class BadInput(Exception):
    """The input file cannot be charted; the message names the file and the value."""


def load(path):
    """The sweep document in `path`, checked, or BadInput."""
    try:
        with open(path) as source:
            text = source.read()
    except OSError as error:
        raise BadInput("cannot read %s: %s" % (path, error.strerror or error))
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise BadInput("%s is not valid JSON: %s" % (path, error))
    if not isinstance(document, dict):
        raise BadInput("%s: expected a JSON object with \"rows\", got %s"
                       % (path, type(document).__name__))
    rows = document.get("rows")
    if not isinstance(rows, list) or not rows:
        raise BadInput("%s has no rows (\"rows\": %s); run tools/scaling_sweep.py to make one"
                       % (path, json.dumps(rows)))
    for number, row in enumerate(rows, 1):
        check_row(path, number, row)
    for key in ("machine", "date"):
        if key not in document:
            raise BadInput("%s lacks \"%s\" (the chart's title names it)" % (path, key))
    return document


def check_row(path, number, row):
    if not isinstance(row, dict):
        raise BadInput("%s: row %d is not an object: %s" % (path, number, json.dumps(row)))
    for field, kind in ROW_FIELDS.items():
        value = row.get(field)
        if not isinstance(value, kind) or isinstance(value, bool):
            raise BadInput("%s: row %d: \"%s\" is %s, expected %s"
                           % (path, number, field, json.dumps(value),
                              "a number" if kind != str else "a string"))
    if row["workers"] < 1:
        raise BadInput("%s: row %d: \"workers\" is %d, expected >= 1"
                       % (path, number, row["workers"]))
    if not (math.isfinite(row["value"]) and row["value"] > 0):
        raise BadInput("%s: row %d: \"value\" is %s, expected a number > 0 (the y axis is log)"
                       % (path, number, json.dumps(row["value"])))


def series_label(row):
    label = RUNTIME_LABELS.get(row["runtime"], row["runtime"])
    return label + " " + row["strategy"] if row.get("strategy") else label


def series_key(row):
    runtime = row["runtime"]
    rank = RUNTIME_ORDER.index(runtime) if runtime in RUNTIME_ORDER else len(RUNTIME_ORDER)
    return (rank, runtime, row.get("strategy") or "")


class Panel:
    """One workload's headline metric: its lines, by series key, each sorted by workers."""

    def __init__(self, workload, metric, unit):
        self.workload = workload
        self.metric = metric
        self.unit = unit
        self.own_shape = False
        self.lines = {}

    def workers(self):
        return sorted({row["workers"] for points in self.lines.values() for row in points})


def panels(rows):
    """A Panel per workload, in the order the rows first name them."""
    by_workload = {}
    for row in rows:
        panel = by_workload.setdefault(
            row["workload"], Panel(row["workload"], row["metric"], row["unit"]))
        if row["metric"] == panel.metric:
            panel.lines.setdefault(series_key(row), []).append(row)
            panel.own_shape = panel.own_shape or bool(row.get("own_shape"))
    for panel in by_workload.values():
        for points in panel.lines.values():
            points.sort(key=lambda row: row["workers"])
    return list(by_workload.values())


def machine_cpus(document):
    """The machine's CPU count from the file, or None when it does not say."""
    machine = document["machine"]
    cpus = machine.get("cpus") if isinstance(machine, dict) else None
    if not isinstance(cpus, int) or isinstance(cpus, bool) or cpus < 1:
        return None
    return cpus


def title(document):
    machine = document["machine"]
    if isinstance(machine, dict):
        parts = [machine.get("description"), machine.get("cpu")]
        text = ", ".join(str(part) for part in parts if part)
    else:
        text = str(machine)
    return "Spindle scaling: %s, %s" % (text, str(document["date"])[:10])


def caption(document):
    sweep = document.get("sweep") or {}
    versions = document.get("versions") or {}
    parts = []
    if "repetitions" in sweep:
        parts.append("median of %s repetitions (bars: min to max)" % sweep["repetitions"])
    if sweep.get("scale", 1) != 1:
        parts.append("spindle_bench --scale=%s" % sweep["scale"])
    named = ["%s %s" % (RUNTIME_LABELS.get(name, name), version)
             for name, version in versions.items() if version]
    if named:
        parts.append(", ".join(named))
    lines = ["; ".join(parts)] if parts else []
    load = document.get("load_average") or {}
    use = document.get("cpu_use") or {}
    others = []
    if "other_cpus" in use:
        others.append("other processes used %s CPUs on average over the run's %s s"
                      % (use["other_cpus"], use.get("wall_s")))
    if load.get("start") and load.get("end"):
        others.append("load average (1 min) %s at start, %s at end"
                      % (load["start"][0], load["end"][0]))
    if others:
        lines.append("; ".join(others))
    return "\n".join(lines + [str(note) for note in document.get("notes") or []])


def draw_panel(ax, panel, colors, labels, cpus):
    from matplotlib.ticker import LogFormatter, NullLocator

    for key in sorted(panel.lines):
        points = panel.lines[key]
        values = [row["value"] for row in points]
        below = [row["value"] - row.get("min", row["value"]) for row in points]
        above = [row.get("max", row["value"]) - row["value"] for row in points]
        ax.errorbar([row["workers"] for row in points], values, yerr=[below, above],
                    marker="o", markersize=4, capsize=3, color=colors[key], label=labels[key])
    ax.set_yscale("log")
    # Plain numbers; the 2s, 3s and 5s of a decade labelled too on a short axis.
    ax.yaxis.set_major_formatter(LogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False, minor_thresholds=(2, 0.5)))
    workers = panel.workers()
    ax.set_xscale("log", base=2)
    ax.set_xticks(workers)
    ax.set_xticklabels([str(count) for count in workers])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlim(workers[0] / 1.3, workers[-1] * 1.3)
    oversubscribed = [count for count in workers if cpus is not None and count > cpus]
    if oversubscribed:
        # From halfway (on the log axis) between the CPU count and the next count.
        ax.axvspan(math.sqrt(cpus * oversubscribed[0]), workers[-1] * 1.3, color="0.9",
                   zorder=0)
    own = " (own shape: the same at every count)" if panel.own_shape else ""
    ax.set_title(panel.workload + own, fontsize=10)
    ax.set_xlabel("workers")
    ax.set_ylabel("%s (%s)" % (panel.metric, panel.unit))
    ax.grid(True, which="both", linewidth=0.4, alpha=0.6)


def draw(document, out_path):
    """Writes the PNG; returns (workloads, line labels) drawn."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    drawn = panels(document["rows"])
    labels = {key: series_label(points[0])
              for panel in drawn for key, points in panel.lines.items()}
    keys = sorted(labels)
    colors = {key: "C%d" % index for index, key in enumerate(keys)}
    cpus = machine_cpus(document)
    notes = caption(document)
    if cpus is not None and any(row["workers"] > cpus for row in document["rows"]):
        notes += "\nshaded: more workers than the machine's %d CPUs (oversubscribed)" % cpus
    notes = notes.strip()

    # Sizes in inches: the title and caption on top, the axis labels and legend below.
    columns = min(PANEL_COLUMNS, len(drawn))
    panel_rows = math.ceil(len(drawn) / columns)
    header = 0.45 + 0.16 * (notes.count("\n") + 1)
    width, height = 4.6 * columns, 3.4 * panel_rows + header + 0.4
    figure, axes = plt.subplots(panel_rows, columns, figsize=(width, height), squeeze=False)
    for ax, panel in zip(axes.flat, drawn):
        draw_panel(ax, panel, colors, labels, cpus)
    for ax in list(axes.flat)[len(drawn):]:
        ax.set_visible(False)
    handles = {}
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, handle)
    ordered = [labels[key] for key in keys]
    figure.legend([handles[label] for label in ordered], ordered, loc="lower center",
                  ncol=len(ordered), frameon=False)
    figure.suptitle(title(document), fontsize=12, y=1 - 0.12 / height, va="top")
    figure.text(0.5, 1 - 0.42 / height, notes, ha="center", va="top", fontsize=8)
    figure.subplots_adjust(left=0.7 / width, right=1 - 0.2 / width,
                           top=1 - (header + 0.3) / height, bottom=0.9 / height,
                           wspace=0.32, hspace=0.45)
    figure.savefig(out_path, dpi=100)
    plt.close(figure)
    return [panel.workload for panel in drawn], ordered


def main(argv):
    if len(argv) != 2:
        print("usage: scaling_chart.py SWEEP.json OUT.png", file=sys.stderr)
        return 2
    source, out_path = argv
    try:
        document = load(source)
    except BadInput as error:
        print("scaling_chart: %s" % error, file=sys.stderr)
        return 1
    if importlib.util.find_spec("matplotlib") is None:
        print("scaling_chart: no matplotlib for %s: install Debian's python3-matplotlib "
              "(./bazelw does) and run the script as tools/scaling_chart.py" % sys.executable,
              file=sys.stderr)
        return 1
    try:
        workloads, series = draw(document, out_path)
    except OSError as error:
        print("scaling_chart: cannot write %s: %s" % (out_path, error.strerror or error),
              file=sys.stderr)
        return 1
    print("scaling_chart: wrote %s: %d workloads (%s), lines: %s\ntitle: %s"
          % (out_path, len(workloads), ", ".join(workloads), ", ".join(series),
             title(document)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
