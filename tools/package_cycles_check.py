#!/usr/bin/env python3
"""Fails on a cycle between the Bazel packages of the library: the graph of
`bazel query 'deps(kind("cc_library", //fiber/... + //runtime/... + //sync/... +
//timer/... + //io/...), 1)'` with its edges folded to packages must be acyclic, so the
packages form a ladder that a reader can learn bottom-up (docs/internals/layout.md,
"Levels").

It reads the BUILD files itself, as tools/bazel_to_cmake.py does (its Workspace), so it
needs no Bazel server; a select()'s every branch counts as an edge.

    tools/package_cycles_check.py            # exit status 1 on a cycle
    tools/package_cycles_check.py --graph    # also print each package's dependencies
    tools/package_cycles_check.py --levels   # also print each package's height (the
                                             # longest path below it), lowest first
    tools/package_cycles_check.py --plant FROM TO
        # first adds a dependency of rule FROM on rule TO, as if a BUILD file had it:
        # the check shown failing on a cycle it did not see (CI's layering lane plants
        # //runtime/internal/base:topology -> //runtime/internal/group:scheduling_group
        # and expects the failure)

Then checks the graph against bazel/layers.bzl's LEVELS: every package of the library
has a level there, and every dependency points to a package of a lower level (the
ladder of docs/internals/layout.md; tools/layering_check.py holds the #includes to the
same list).

Prints each cycle as its strongly connected component and one of its edges' rules:
`cycle among N packages: //a //b ...` then `  //a:x -> //b:y` for each edge inside it."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bazel_to_cmake  # noqa: E402  (the BUILD-file reader)
import layering_check  # noqa: E402  (bazel/layers.bzl's LEVELS, as LAYERS)

# The library: the packages under these folders. Test helpers (testonly cc_library
# rules: runtime_testing, the models' groups) count as the query counts them: a helper
# that needs the public API lives in a package above it.
ROOTS = ("fiber", "runtime", "sync", "timer", "io")


def in_library(package):
    return any(package == root or package.startswith(root + "/") for root in ROOTS)


def flat_deps(value):
    if isinstance(value, bazel_to_cmake.Select):
        out = []
        for kind, part in value.parts:
            if kind == "plain":
                out.extend(part)
            else:
                for branch in part.values():
                    out.extend(branch)
        return out
    return list(value or [])


def package_graph(workspace):
    """package -> {dependency package -> [(from label, to label)]} over the library's
    cc_library rules."""
    graph = {}
    for label, rule in sorted(workspace.rules.items()):
        if rule.kind != "cc_library" or not in_library(rule.package):
            continue
        edges = graph.setdefault(rule.package, {})
        for dep in flat_deps(rule.attrs.get("deps")):
            if not dep.startswith((":", "//")):
                continue  # @external
            target = workspace.normalize(rule.package, dep)
            to_package = target[2:].split(":", 1)[0]
            if to_package == rule.package or not in_library(to_package):
                continue
            edges.setdefault(to_package, []).append((label, target))
            graph.setdefault(to_package, {})
    return graph


def strongly_connected(graph):
    """Tarjan's algorithm, iterative; returns the components of more than one node."""
    index = {}
    low = {}
    on_stack = set()
    stack = []
    components = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def levels(graph):
    """package -> 1 + the highest level among its dependencies (0 for none); acyclic
    graphs only."""
    level = {}

    def visit(package):
        if package not in level:
            level[package] = 0  # guards recursion; the graph is acyclic here
            level[package] = 1 + max((visit(d) for d in graph[package]), default=-1)
        return level[package]

    for package in graph:
        visit(package)
    return level


def level_errors(graph, declared):
    """Each package must be in LEVELS, and each of its dependencies at a lower level."""
    errors = []
    for package in sorted(graph):
        if package not in declared:
            errors.append(f"//{package}: not in bazel/layers.bzl's LEVELS (give it a level)")
    for package in sorted(graph):
        for to_package in sorted(graph[package]):
            if package in declared and to_package in declared \
                    and declared[to_package] >= declared[package]:
                frm, to = graph[package][to_package][0]
                errors.append(f"{frm} -> {to}: level {declared[to_package]} is not below "
                              f"level {declared[package]} (bazel/layers.bzl's LEVELS)")
    return errors


def main():
    workspace = bazel_to_cmake.Workspace()
    workspace.load_all()
    graph = package_graph(workspace)
    if "--plant" in sys.argv:
        at = sys.argv.index("--plant")
        if len(sys.argv) < at + 3:
            sys.exit("package_cycles_check: --plant needs two rules, FROM and TO")
        frm, to = sys.argv[at + 1], sys.argv[at + 2]
        for label in (frm, to):
            if label not in workspace.rules:
                sys.exit(f"package_cycles_check: --plant: no rule {label}")
        frm_package, to_package = frm[2:].split(":")[0], to[2:].split(":")[0]
        graph.setdefault(frm_package, {}).setdefault(to_package, []).insert(0, (frm, to))
        graph.setdefault(to_package, {})
        print(f"package_cycles_check: planted {frm} -> {to}")
    if "--graph" in sys.argv:
        for package in sorted(graph):
            deps = " ".join("//" + d for d in sorted(graph[package]))
            print(f"//{package}: {deps}")
    components = strongly_connected(graph)
    for component in components:
        print(f"cycle among {len(component)} packages: "
              + " ".join("//" + p for p in component))
        members = set(component)
        for package in component:
            for to_package in sorted(graph[package]):
                if to_package in members:
                    frm, to = graph[package][to_package][0]
                    more = len(graph[package][to_package]) - 1
                    suffix = f" (and {more} more)" if more else ""
                    print(f"  {frm} -> {to}{suffix}")
    if components:
        print(f"package_cycles_check: {len(components)} cycle(s) among the library's "
              "packages; cut the edge that points down-to-up (docs/internals/layout.md, "
              "\"Levels\")")
        return 1
    if "--levels" in sys.argv:
        for package, level in sorted(levels(graph).items(), key=lambda kv: (kv[1], kv[0])):
            print(f"height {level}: //{package}")
    errors = level_errors(graph, dict(layering_check.LAYERS))
    for error in errors:
        print(error)
    if errors:
        print(f"package_cycles_check: {len(errors)} dependencies against the levels")
        return 1
    print(f"package_cycles_check: {len(graph)} packages, no cycle, every dependency "
          "points to a lower level")
    return 0


if __name__ == "__main__":
    sys.exit(main())
