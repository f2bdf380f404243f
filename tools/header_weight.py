#!/usr/bin/env python3
"""How much of Spindle each public header drags into a user's translation unit.

For every public header (version.h and the top level of fiber/, runtime/, sync/,
timer/, io/), the project headers it includes transitively, as the compiler sees them
(g++ -M), and whether glog comes with it. Prints one row per header:

  header  project-includes  glog  engine headers it reaches (timer/, stack allocator,
                                  model checker)

  tools/header_weight.py            the table
  tools/header_weight.py --check    also exit 1 if a public header includes glog, or
                                    one of LIGHT reaches more than MAX_LIGHT project
                                    headers or any engine header
  tools/header_weight.py --list H   the project headers H reaches

ctest runs --check (tools:header_weight_check).
"""

import argparse
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import bazel_to_cmake  # noqa: E402  (the public header list lives there)

# The headers a service includes first; each must stay light.
LIGHT = ["sync/mutex.h", "sync/future.h", "io/server.h"]
MAX_LIGHT = 6


def engine(path):
    """Engine headers a public header must not reach: what the reason is, or ""."""
    if path.startswith("timer/"):
        return "timer"
    if "stack_allocator" in path:
        return "stack allocator"
    # atomic.h is the model checker's seam (std::atomic here, Relacy's in a model build).
    if "model" in path or "relacy" in path or path == "fiber/internal/atomic.h":
        return "model checker"
    return ""


def reach(header):
    """(project headers, system headers) that `header` includes, transitively."""
    result = subprocess.run(
        ["g++", "-std=c++17", "-M", "-I" + str(REPO), "-x", "c++", str(REPO / header)],
        cwd=REPO, capture_output=True, text=True)
    if result.returncode != 0:
        sys.exit("g++ -M %s failed:\n%s" % (header, result.stderr))
    words = result.stdout.replace("\\\n", " ").split(":", 1)[1].split()
    project, system = set(), set()
    for word in words:
        path = os.path.normpath(os.path.join(REPO, word))
        rel = os.path.relpath(path, REPO)
        if rel == header:
            continue
        if rel.startswith(".."):
            system.add(path)
        else:
            project.add(rel)
    return project, system


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--list", metavar="HEADER")
    options = parser.parse_args()
    if options.list:
        project, _ = reach(options.list)
        print("\n".join(sorted(project)))
        return 0
    headers = bazel_to_cmake.Writer(None).public_headers()
    failures = []
    print("%-28s %8s  %-4s  %s" % ("public header", "includes", "glog", "engine"))
    for header in headers:
        project, system = reach(header)
        glog = any("/glog/" in path for path in system)
        reached = sorted({engine(p) for p in project} - {""})
        print("%-28s %8d  %-4s  %s" % (header, len(project), "yes" if glog else "no",
                                       ", ".join(reached)))
        if glog:
            failures.append("%s includes glog" % header)
        if header in LIGHT and len(project) > MAX_LIGHT:
            failures.append("%s reaches %d project headers (at most %d)"
                            % (header, len(project), MAX_LIGHT))
        if header in LIGHT and reached:
            failures.append("%s reaches engine headers (%s)" % (header, ", ".join(reached)))
    if options.check and failures:
        for failure in failures:
            print("header weight check FAILED: " + failure)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
