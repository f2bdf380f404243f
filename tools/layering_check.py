#!/usr/bin/env python3
"""Fails on an #include that climbs the layers of ../shared/ARCHITECTURE.md (as
docs/internals/layout.md's "Layers" lists them): a library file may include headers of
its own layer and of the layers below, never of a layer above. Tests, benchmarks and test
helpers of a component may use the layers above it (they exercise it through the public
API), so they are not checked; examples/, benchmarks/ and tests/ are the top layer.

    tools/layering_check.py          # the whole tree; exit status 1 on any climb
    tools/layering_check.py --list   # also print each folder's layer

Prints one line per climbing include: FILE:LINE: includes HEADER (layer N > M).

Also the house's size bound: a library file (the same files: not tests, benchmarks or
test helpers) has at most MAX_LINES lines, so each can be read in one sitting; a file
past it is split by responsibility. Prints FILE: N lines (at most 600)."""

import os
import re
import sys

# Folder -> layer, lowest first. A folder not listed takes its parent's layer.
LAYERS = [
    ("fiber/internal", 1),   # the execution core: context switch, stacks, FiberEntity
    ("runtime/internal", 2), # scheduling: queues, strategies, groups, workers
    ("timer/internal", 3),   # a TimerWorker per group
    ("sync/internal", 4),    # the wait queue and the timed park
    ("sync", 5),             # the primitives, futures
    ("fiber", 6),            # the public fiber API (Fiber, this_fiber, Async)
    ("runtime", 6),          # the public runtime API (StartRuntime, metrics)
    ("timer", 6),            # the public timer API (SetTimer)
    ("io/internal", 7),      # the reactor of each group
    ("io", 7),               # fiber-blocking sockets
    ("integrations", 8),     # Spindle inside other frameworks (gRPC), over the public API
]
TOP = 8  # benchmarks/, examples/, tests/, tools/
MAX_LINES = 600

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Files that test or measure a component (and may use the layers above it).
EXEMPT = re.compile(r'(_test|_benchmark|_testing|_test_util|lost_wake_hammer)\.(cc|h)$')


def layer_of(path):
    best = None
    for folder, layer in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, layer)
    return best[1] if best else None


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    if "--list" in sys.argv:
        for folder, layer in LAYERS:
            print(f"layer {layer}: {folder}/")
    climbs = 0
    checked = 0
    too_long = 0
    for top in sorted({folder.split("/")[0] for folder, _ in LAYERS}):
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")) or EXEMPT.search(name):
                    continue
                path = os.path.join(dirpath, name)
                mine = layer_of(dirpath)
                checked += 1
                with open(path, encoding="utf-8") as f:
                    lines = f.readlines()
                if len(lines) > MAX_LINES:
                    print(f"{path}: {len(lines)} lines (at most {MAX_LINES})")
                    too_long += 1
                for number, line in enumerate(lines, 1):
                    m = INCLUDE.match(line)
                    if not m:
                        continue
                    header = m.group(1)
                    theirs = layer_of(os.path.dirname(header))
                    if theirs is None:
                        # Not one of ours (absl/, gflags/, ...) unless it is under
                        # a top-level folder of the top layer.
                        if header.split("/")[0] in ("benchmarks", "examples", "tests"):
                            theirs = TOP
                        else:
                            continue
                    if theirs > mine:
                        print(f"{path}:{number}: includes {header} "
                              f"(layer {theirs} > {mine})")
                        climbs += 1
    print(f"layering_check: {checked} files, {climbs} climbing includes, "
          f"{too_long} over {MAX_LINES} lines")
    return 1 if climbs or too_long else 0


if __name__ == "__main__":
    sys.exit(main())
