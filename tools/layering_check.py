#!/usr/bin/env python3
"""Fails on an #include that climbs the levels of bazel/layers.bzl (LEVELS;
docs/internals/layout.md, "Levels"): a library file may include headers of its own
package and of the levels below, never of a level above or of a sibling package of its
own level. Tests, benchmarks and test helpers of a component may use the levels above
it (they exercise it through the public API), so they are not checked; examples/,
benchmarks/ and tests/ are the top level.

    tools/layering_check.py          # the whole tree; exit status 1 on any climb
    tools/layering_check.py --list   # also print each folder's level

Prints one line per climbing include: FILE:LINE: includes HEADER (level N > M).

Also the house's size bound: a library file (the same files: not tests, benchmarks or
test helpers) has at most MAX_LINES lines, so each can be read in one sitting; a file
past it is split by responsibility. Prints FILE: N lines (at most 600)."""

import os
import re
import sys

# Folder -> level, lowest first: bazel/layers.bzl's LEVELS, the one list of the levels
# (tools/package_cycles_check.py checks the BUILD files against it). A folder not
# listed takes its parent's level.
def _load_levels():
    layers = {}
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        "bazel", "layers.bzl")
    with open(path, encoding="utf-8") as f:
        exec(compile(f.read(), path, "exec"), layers)
    return [(folder, level) for folder, level, _ in layers["LEVELS"]], layers["TOP_LEVEL"]


LAYERS, TOP = _load_levels()  # TOP: benchmarks/, examples/, tests/, tools/
MAX_LINES = 600

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
# Files that test or measure a component (and may use the layers above it).
EXEMPT = re.compile(r'(_test|_benchmark|_testing|_test_util|lost_wake_hammer)\.(cc|h)$')


def layer_of(path):
    """path's (folder of LEVELS, level), or None."""
    best = None
    for folder, layer in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, layer)
    return best


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    if "--list" in sys.argv:
        for folder, layer in LAYERS:
            print(f"level {layer}: {folder}/")
    climbs = 0
    checked = 0
    too_long = 0
    for top in sorted({folder.split("/")[0] for folder, _ in LAYERS}):
        for dirpath, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".h", ".cc")) or EXEMPT.search(name):
                    continue
                path = os.path.join(dirpath, name)
                my_folder, mine = layer_of(dirpath)
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
                    found = layer_of(os.path.dirname(header))
                    if found is None:
                        # Not one of ours (absl/, gflags/, ...) unless it is under
                        # a top-level folder of the top layer.
                        if header.split("/")[0] in ("benchmarks", "examples", "tests"):
                            found = ("top", TOP)
                        else:
                            continue
                    their_folder, theirs = found
                    if theirs > mine:
                        print(f"{path}:{number}: includes {header} "
                              f"(level {theirs} > {mine})")
                        climbs += 1
                    elif theirs == mine and their_folder != my_folder:
                        # Two packages of one level are siblings: neither uses the
                        # other (or one of them belongs a level higher).
                        print(f"{path}:{number}: includes {header} "
                              f"(a sibling of level {mine}: {their_folder}/)")
                        climbs += 1
    print(f"layering_check: {checked} files, {climbs} climbing includes, "
          f"{too_long} over {MAX_LINES} lines")
    return 1 if climbs or too_long else 0


if __name__ == "__main__":
    sys.exit(main())
