#!/usr/bin/env python3
"""Writes cmake/BazelTargets.cmake, the CMake twin of every BUILD.bazel target.

Bazel's BUILD files are the one source of truth for what is built and tested. This
script reads them (it runs each as Python with Bazel's functions and Spindle's macros
replaced by recorders: BUILD files are Starlark, a subset of Python) and writes one
CMake call per rule, in dependency order, for the functions in cmake/SpindleRules.cmake:

  cc_library      -> spindle_cc_library     (an OBJECT library and a STATIC one)
  cc_test         -> spindle_cc_test        (an executable and its ctest entries)
  spindle_cc_test -> spindle_cc_test STRATEGY_TWINS [CHAOS ...] (the same twins:
                     bazel/testing.bzl's _v2, _relaxed and chaos entries, same seeds)
  cc_binary       -> spindle_cc_binary
  sh_test         -> spindle_sh_test
  genrule         -> spindle_genrule
  spindle_grpc_proto_library -> spindle_grpc_proto_library (bazel/grpc.bzl's twin:
                     protoc and grpc_cpp_plugin at build time; skipped without gRPC)

It also writes the lists the install needs: the public headers and every project
header they include (found with the compiler's -MM), the libraries that make up
libspindle (the closure of //:spindle), and the third-party libraries those use.

  tools/bazel_to_cmake.py            rewrite cmake/BazelTargets.cmake
  tools/bazel_to_cmake.py --check    exit 1, naming each target, header or source
                                     that one build has and the other lacks, if the
                                     committed file is not what the BUILD files give

Both fail first, naming the test, on a test binary that starts a runtime without the
fiber dump on a timeout (it must reach //runtime/internal/testing:timeout_testing).

The check is the drift gate: .ci/run's cmake lane runs it, and so does ctest
(tools:cmake_drift_check). Needs python3 and g++; not Bazel.
"""

import argparse
import difflib
import hashlib
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
OUTPUT = REPO / "cmake" / "BazelTargets.cmake"

# Folders whose BUILD files are not packages of this workspace: Bazel's stand-in
# repositories (bazel/README.md) and the embedding example's own workspace.
SKIPPED_DIRS = {
    "bazel/rules_cc",
    "bazel/rules_java",
    "bazel/remote_coverage_tools",
    "examples/embedding",
}

# Public headers: the top-level files of these folders (never internal/), the API a
# user includes, and version.h.
PUBLIC_FOLDERS = ["fiber", "runtime", "sync", "timer", "io"]
PUBLIC_ROOT_HEADERS = ["version.h"]

# What libspindle holds: these targets and every non-test library they depend on.
LIBRARY_ROOTS = ["//:spindle"]

# Every test binary that starts a runtime (reaches RUNTIME) links TIMEOUT_DUMP, so a hang
# dumps its fibers before Bazel or ctest kills it (runtime/internal/testing/timeout_testing.h).
RUNTIME = "//runtime:runtime"
TIMEOUT_DUMP = "//runtime/internal/testing:timeout_testing"

# select() keys -> CMake generator-expression conditions.
CONDITIONS = {
    "//bazel:test_seams": "$<BOOL:${SPINDLE_TEST_SEAMS}>",
    "//fiber/internal:x86_64": "$<STREQUAL:${SPINDLE_ARCH},x86_64>",
    "//fiber/internal:aarch64": "$<STREQUAL:${SPINDLE_ARCH},aarch64>",
}

# Bazel's default timeouts (seconds) by size, and the explicit timeout values.
SIZE_TIMEOUT = {"small": 60, "medium": 300, "large": 900, "enormous": 3600}
TIMEOUT_VALUE = {"short": 60, "moderate": 300, "long": 900, "eternal": 3600}

HEADER_SUFFIXES = (".h", ".hpp", ".inc")

# The attributes this script carries over, per rule kind. Any other attribute is an
# error: silently dropped, it would let --check pass while CMake builds or runs the
# target differently (teach the script the attribute first).
_COMMON = {"name", "visibility", "tags", "testonly", "target_compatible_with"}
_CC = _COMMON | {"srcs", "hdrs", "deps", "copts", "linkopts"}
_TEST = {"size", "timeout", "shard_count", "args", "linkstatic"}
ALLOWED_ATTRIBUTES = {
    "cc_library": _CC | {"defines", "textual_hdrs", "alwayslink", "linkstatic"},
    "cc_test": _CC | _TEST | {"data"},
    "spindle_cc_test": _CC | _TEST | {"data", "chaos"},
    "cc_binary": _CC | {"data"},
    "sh_test": _COMMON | {"srcs", "args", "data", "size", "timeout", "shard_count"},
    "genrule": {"name", "visibility", "srcs", "outs", "cmd", "tools"},
    "spindle_grpc_proto_library": {"name", "visibility", "src", "testonly", "tags"},
}


class Select:
    """A select(): a dict of condition label -> list."""

    def __init__(self, cases):
        self.parts = [("select", dict(cases))]

    def __add__(self, other):
        result = Select({})
        result.parts = self.parts + _parts(other)
        return result

    def __radd__(self, other):
        result = Select({})
        result.parts = _parts(other) + self.parts
        return result


def _parts(value):
    if isinstance(value, Select):
        return value.parts
    return [("plain", list(value))]


class Seams:
    """bazel/testing.bzl's NEEDS_TEST_SEAMS / WITHOUT_TEST_SEAMS."""

    def __init__(self, name):
        self.name = name


NEEDS_TEST_SEAMS = Seams("REQUIRES_SEAMS")
WITHOUT_TEST_SEAMS = Seams("WITHOUT_SEAMS")


def java_string_hash(text):
    """Starlark's hash() of a string: Java's String.hashCode (a signed 32-bit int)."""
    value = 0
    for char in text:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    return value - (1 << 32) if value >= (1 << 31) else value


def chaos_seed(name, strategy):
    # bazel/testing.bzl's _chaos_seed (Starlark's % floors, as Python's does).
    return (java_string_hash(name + "/" + strategy) % 1000000007) + 1


class Rule:
    def __init__(self, kind, package, attrs, build_file):
        self.kind = kind
        self.package = package
        self.attrs = attrs
        self.name = attrs["name"]
        self.label = "//%s:%s" % (package, self.name)
        self.build_file = build_file


class Workspace:
    def __init__(self):
        self.rules = {}  # label -> Rule
        self.packages = []

    def load_package(self, package):
        build_file = REPO / package / "BUILD.bazel"
        env = {}
        workspace = self

        def record(kind):
            def recorder(**attrs):
                unknown = sorted(set(attrs) - ALLOWED_ATTRIBUTES[kind])
                if unknown:
                    sys.exit("%s: %s %s has attribute(s) %s, which bazel_to_cmake.py "
                             "does not carry over to CMake (teach it them: "
                             "ALLOWED_ATTRIBUTES and the writer)"
                             % (build_file, kind, attrs.get("name"), ", ".join(unknown)))
                rule = Rule(kind, package, attrs, build_file)
                if rule.label in workspace.rules:
                    sys.exit("%s: %s defined twice" % (build_file, rule.label))
                workspace.rules[rule.label] = rule
            return recorder

        def ignore(*args, **kwargs):
            del args, kwargs

        def glob(*args, **kwargs):
            del args, kwargs
            sys.exit("%s: glob() in a BUILD file (STYLE.md: no globs; list the files)"
                     % build_file)

        def load(path, *symbols):
            if path == "//bazel:layers.bzl":
                layers = {}
                exec(compile((REPO / "bazel" / "layers.bzl").read_text(),
                             "bazel/layers.bzl", "exec"), layers)
                for symbol in symbols:
                    env[symbol] = layers[symbol]
            elif path == "//bazel:testing.bzl":
                known = {
                    "spindle_cc_test": record("spindle_cc_test"),
                    "NEEDS_TEST_SEAMS": NEEDS_TEST_SEAMS,
                    "WITHOUT_TEST_SEAMS": WITHOUT_TEST_SEAMS,
                    "MODEL_COPTS": ["-O2"],
                }
                for symbol in symbols:
                    if symbol not in known:
                        sys.exit("%s: load of %s from %s: bazel_to_cmake.py does not "
                                 "know it (teach it there)" % (build_file, symbol, path))
                    env[symbol] = known[symbol]
            elif path == "//bazel:grpc.bzl":
                for symbol in symbols:
                    if symbol != "spindle_grpc_proto_library":
                        sys.exit("%s: load of %s from %s: bazel_to_cmake.py does not "
                                 "know it (teach it there)" % (build_file, symbol, path))
                    env[symbol] = record("spindle_grpc_proto_library")
            else:
                sys.exit("%s: load(%r): bazel_to_cmake.py knows only //bazel:layers.bzl, "
                         "//bazel:testing.bzl and //bazel:grpc.bzl (teach it the new file)"
                         % (build_file, path))

        env.update({
            "load": load,
            "select": Select,
            "package": ignore,
            "exports_files": ignore,
            "glob": glob,
            "config_setting": ignore,
            "cc_library": record("cc_library"),
            "cc_test": record("cc_test"),
            "cc_binary": record("cc_binary"),
            "sh_test": record("sh_test"),
            "genrule": record("genrule"),
        })
        exec(compile(build_file.read_text(), str(build_file), "exec"), env)
        self.packages.append(package)

    def load_all(self):
        for dirpath, dirnames, filenames in os.walk(REPO):
            rel = os.path.relpath(dirpath, REPO)
            rel = "" if rel == "." else rel
            dirnames[:] = sorted(
                d for d in dirnames
                if not d.startswith((".", "bazel-", "build-")) and d != "build"
                and os.path.join(rel, d) not in SKIPPED_DIRS
                and not os.path.islink(os.path.join(dirpath, d)))
            if "BUILD.bazel" in filenames:
                self.load_package(rel)

    # --- labels -------------------------------------------------------------

    def resolve(self, package, label):
        """A label (or a bare file name) as written in `package` -> (package, name)."""
        if label.startswith("//"):
            body = label[2:]
            if ":" in body:
                pkg, name = body.split(":", 1)
            else:
                pkg, name = body, body.rsplit("/", 1)[-1]
            return pkg, name
        if label.startswith(":"):
            return package, label[1:]
        return package, label

    def normalize(self, package, label):
        if label == "//conditions:default":
            return label
        return "//%s:%s" % self.resolve(package, label)

    def rule_of(self, package, label):
        pkg, name = self.resolve(package, label)
        return self.rules.get("//%s:%s" % (pkg, name))


def target_name(label):
    """//fiber/internal:context -> fiber.internal.context; //:spindle -> top.spindle."""
    pkg, name = label[2:].split(":", 1)
    prefix = pkg.replace("/", ".") if pkg else "top"
    return "%s.%s" % (prefix, name)


def third_party_name(label):
    return "third_party." + label.split(":", 1)[1]


class Writer:
    def __init__(self, workspace):
        self.ws = workspace
        self.lines = []
        self.third_party = set()

    # --- values -------------------------------------------------------------

    def is_third_party(self, label):
        return label.startswith("//bazel/third_party:")

    def dep_name(self, rule, label):
        pkg, name = self.ws.resolve(rule.package, label)
        full = "//%s:%s" % (pkg, name)
        if self.is_third_party(full):
            self.third_party.add(name)
            return third_party_name(full)
        if full not in self.ws.rules:
            sys.exit("%s: %s depends on %s, which no BUILD file defines"
                     % (rule.build_file, rule.label, full))
        return target_name(full)

    def source_path(self, rule, label):
        """A srcs/hdrs entry -> a path relative to the repository (or a genrule's
        output, as ${SPINDLE_GEN_DIR}/...)."""
        dep = self.ws.rule_of(rule.package, label)
        if dep is not None:
            if dep.kind != "genrule":
                sys.exit("%s: %s lists rule %s among its sources; bazel_to_cmake.py "
                         "takes only files and genrules there"
                         % (rule.build_file, rule.label, dep.label))
            return ["${SPINDLE_GEN_DIR}/%s/%s" % (dep.package, out)
                    for out in dep.attrs["outs"]]
        pkg, name = self.ws.resolve(rule.package, label)
        path = os.path.join(pkg, name)
        if not (REPO / path).is_file():
            sys.exit("%s: %s lists %s, which is neither a file nor a rule"
                     % (rule.build_file, rule.label, label))
        return [path]

    def expand(self, rule, value, convert, paths=False):
        """A list or select() -> CMake list items (select cases become generator
        expressions)."""
        items = []
        for kind, part in _parts(value if value is not None else []):
            if kind == "plain":
                for entry in part:
                    items.extend(convert(entry))
                continue
            part = {self.ws.normalize(rule.package, k): v for k, v in part.items()}
            conditions = []
            for key in part:
                if key == "//conditions:default":
                    continue
                if key not in CONDITIONS:
                    sys.exit("%s: %s selects on %s; bazel_to_cmake.py's CONDITIONS "
                             "has no CMake condition for it"
                             % (rule.build_file, rule.label, key))
                conditions.append(CONDITIONS[key])
            for key, entries in part.items():
                if key == "//conditions:default":
                    condition = ("$<NOT:$<OR:%s>>" % ",".join(conditions)
                                 if conditions else "1")
                else:
                    condition = CONDITIONS[key]
                for entry in entries:
                    for item in convert(entry):
                        if paths and not item.startswith("${"):
                            item = "${SPINDLE_SOURCE_DIR}/" + item
                        items.append("$<%s:%s>" % (condition, item))
        return items

    def location(self, rule, label):
        """$(location X) / $(rootpath X) in args or a genrule's cmd."""
        dep = self.ws.rule_of(rule.package, label)
        if dep is not None and dep.kind in ("cc_binary", "cc_test"):
            return "$<TARGET_FILE:%s>" % target_name(dep.label)
        pkg, name = self.ws.resolve(rule.package, label)
        path = os.path.join(pkg, name)
        if not (REPO / path).is_file():
            sys.exit("%s: %s: $(location %s) is neither a binary nor a file"
                     % (rule.build_file, rule.label, label))
        return "${SPINDLE_SOURCE_DIR}/" + path

    def substitute(self, rule, text):
        def replace(match):
            return self.location(rule, match.group(2))
        return re.sub(r"\$\((location|rootpath|execpath) ([^)]+)\)", replace, text)

    # --- emission -----------------------------------------------------------

    def emit(self, function, name, sections, flags=()):
        out = ["%s(%s" % (function, name)]
        for flag in flags:
            out.append("  " + flag)
        for key, values in sections:
            if values is None or values == []:
                continue
            if isinstance(values, (str, int)):
                out.append("  %s %s" % (key, cmake_quote(str(values))))
                continue
            out.append("  " + key)
            for value in values:
                out.append("    " + cmake_quote(value))
        out[-1] += ")"
        self.lines.extend(out)
        self.lines.append("")

    def compat_flags(self, rule):
        compat = rule.attrs.get("target_compatible_with")
        if compat is None:
            return []
        if isinstance(compat, Seams):
            return [compat.name]
        sys.exit("%s: %s: target_compatible_with must be NEEDS_TEST_SEAMS or "
                 "WITHOUT_TEST_SEAMS for bazel_to_cmake.py" % (rule.build_file, rule.label))

    def sources(self, rule):
        def convert(entry):
            return self.source_path(rule, entry)
        srcs = self.expand(rule, rule.attrs.get("srcs"), convert, paths=True)
        hdrs = self.expand(rule, rule.attrs.get("hdrs"), convert, paths=True)
        hdrs += self.expand(rule, rule.attrs.get("textual_hdrs"), convert, paths=True)
        return srcs, hdrs

    def deps(self, rule):
        if isinstance(rule.attrs.get("deps"), Select):
            sys.exit("%s: %s selects its deps; bazel_to_cmake.py takes select() only in "
                     "srcs, defines, copts, linkopts and args" % (rule.build_file, rule.label))
        return self.expand(rule, rule.attrs.get("deps"), lambda d: [self.dep_name(rule, d)])

    def test_timing(self, rule):
        size = rule.attrs.get("size") or "medium"
        timeout = rule.attrs.get("timeout")
        seconds = TIMEOUT_VALUE[timeout] if timeout else SIZE_TIMEOUT[size]
        return size, seconds

    def write_rule(self, rule):
        a = rule.attrs
        name = target_name(rule.label)
        if rule.kind == "cc_library":
            srcs, hdrs = self.sources(rule)
            flags = self.compat_flags(rule)
            if a.get("alwayslink"):
                flags.append("ALWAYSLINK")
            if a.get("testonly"):
                flags.append("TESTONLY")
            self.emit("spindle_cc_library", name, [
                ("SRCS", srcs), ("HDRS", hdrs), ("DEPS", self.deps(rule)),
                ("DEFINES", self.expand(rule, a.get("defines"), lambda d: [d])),
                ("COPTS", self.expand(rule, a.get("copts"), lambda d: [d])),
                ("LINKOPTS", self.expand(rule, a.get("linkopts"), lambda d: [d])),
            ], flags)
        elif rule.kind in ("cc_test", "spindle_cc_test"):
            srcs, _ = self.sources(rule)
            size, seconds = self.test_timing(rule)
            flags = self.compat_flags(rule)
            if a.get("linkstatic"):
                flags.append("LINKSTATIC")
            chaos = []
            if rule.kind == "spindle_cc_test":
                flags.append("STRATEGY_TWINS")
                if a.get("chaos", True):
                    for strategy in ("v1", "v2", "relaxed"):
                        chaos += [strategy, str(chaos_seed(rule.name, strategy))]
            self.emit("spindle_cc_test", name, [
                ("LABEL", rule.label[2:]), ("SRCS", srcs), ("DEPS", self.deps(rule)),
                ("COPTS", self.expand(rule, a.get("copts"), lambda d: [d])),
                ("LINKOPTS", self.expand(rule, a.get("linkopts"), lambda d: [d])),
                ("ARGS", self.args(rule)),
                ("SIZE", size), ("TIMEOUT", seconds),
                ("SHARDS", a.get("shard_count")),
                ("TAGS", list(a.get("tags", []))), ("CHAOS_SEEDS", chaos),
            ], flags)
        elif rule.kind == "cc_binary":
            srcs, _ = self.sources(rule)
            flags = ["TESTONLY"] if a.get("testonly") else []
            self.emit("spindle_cc_binary", name, [
                ("OUTPUT_NAME", rule.name), ("SRCS", srcs), ("DEPS", self.deps(rule)),
                ("COPTS", self.expand(rule, a.get("copts"), lambda d: [d])),
                ("LINKOPTS", self.expand(rule, a.get("linkopts"), lambda d: [d])),
            ], flags)
        elif rule.kind == "sh_test":
            (script,) = [p for s in a["srcs"] for p in self.source_path(rule, s)]
            size, seconds = self.test_timing(rule)
            depends = []
            for label in a.get("data", []):
                dep = self.ws.rule_of(rule.package, label)
                if dep is not None and dep.kind in ("cc_binary", "cc_test"):
                    depends.append(target_name(dep.label))
            self.emit("spindle_sh_test", name, [
                ("LABEL", rule.label[2:]), ("SCRIPT", script),
                ("ARGS", self.args(rule)), ("DEPENDS", depends),
                ("SIZE", size), ("TIMEOUT", seconds),
                ("SHARDS", a.get("shard_count")),
                ("TAGS", list(a.get("tags", []))),
            ], self.compat_flags(rule))
        elif rule.kind == "genrule":
            outs = ["${SPINDLE_GEN_DIR}/%s/%s" % (rule.package, o) for o in a["outs"]]
            if len(outs) != 1:
                sys.exit("%s: %s: bazel_to_cmake.py takes genrules of one output"
                         % (rule.build_file, rule.label))
            srcs = [self.location(rule, label) for label in a.get("srcs", [])]
            command = self.substitute(rule, a["cmd"]).replace("$@", outs[0]).replace(
                "$(SRCS)", " ".join(srcs))
            if "$(" in command:
                sys.exit("%s: %s: cmd has a make variable bazel_to_cmake.py does not "
                         "know" % (rule.build_file, rule.label))
            inputs = srcs + [self.location(rule, label) for label in a.get("tools", [])]
            self.emit("spindle_genrule", name, [
                ("OUTPUT", outs[0]), ("COMMAND", command), ("INPUTS", inputs),
            ])
        elif rule.kind == "spindle_grpc_proto_library":
            (src,) = self.source_path(rule, a["src"])
            self.third_party.add("grpc")
            self.emit("spindle_grpc_proto_library", name, [("SRC", src)],
                      ["TESTONLY"] if a.get("testonly") else [])
        else:
            raise AssertionError(rule.kind)

    def args(self, rule):
        def convert(arg):
            # Bazel substitutes $(location) first, then splits the words as a shell does.
            return shlex.split(self.substitute(rule, arg))
        return self.expand(rule, rule.attrs.get("args"), convert)

    # --- order and lists ----------------------------------------------------

    def rule_deps(self, rule):
        """Labels of the workspace rules `rule` needs defined first."""
        needed = []
        for attr in ("deps", "srcs", "data"):
            for kind, part in _parts(rule.attrs.get(attr) or []):
                entries = part if kind == "plain" else [e for v in part.values() for e in v]
                for entry in entries:
                    dep = self.ws.rule_of(rule.package, entry)
                    if dep is not None:
                        needed.append(dep.label)
        args = []
        for kind, part in _parts(rule.attrs.get("args") or []):
            args += part if kind == "plain" else [a for v in part.values() for a in v]
        for arg in args:
            if isinstance(arg, str):
                for match in re.finditer(r"\$\((?:location|rootpath|execpath) ([^)]+)\)", arg):
                    dep = self.ws.rule_of(rule.package, match.group(1))
                    if dep is not None:
                        needed.append(dep.label)
        return needed

    def ordered(self):
        done, order, visiting = set(), [], set()

        def visit(label):
            if label in done:
                return
            if label in visiting:
                sys.exit("dependency cycle through %s" % label)
            visiting.add(label)
            for dep in self.rule_deps(self.ws.rules[label]):
                visit(dep)
            visiting.discard(label)
            done.add(label)
            order.append(label)

        for label in sorted(self.ws.rules):
            visit(label)
        return order

    def library_closure(self):
        seen, stack = set(), list(LIBRARY_ROOTS)
        while stack:
            label = stack.pop()
            if label in seen or self.is_third_party(label):
                continue
            seen.add(label)
            rule = self.ws.rules[label]
            if rule.attrs.get("testonly"):
                sys.exit("%s is testonly but %s reaches it" % (label, LIBRARY_ROOTS))
            for dep in self.rule_deps(rule):
                stack.append(dep)
            for kind, part in _parts(rule.attrs.get("deps") or []):
                for entry in part if kind == "plain" else []:
                    pkg, name = self.ws.resolve(rule.package, entry)
                    full = "//%s:%s" % (pkg, name)
                    if self.is_third_party(full):
                        seen.add(full)
        libraries = sorted(target_name(l) for l in seen
                           if not self.is_third_party(l))
        third_party = sorted(third_party_name(l) for l in seen
                             if self.is_third_party(l))
        return libraries, third_party

    def closure_of(self, label):
        """Every workspace rule `label` reaches (itself included)."""
        seen, stack = set(), [label]
        while stack:
            current = stack.pop()
            if current in seen or current not in self.ws.rules:
                continue
            seen.add(current)
            stack.extend(self.rule_deps(self.ws.rules[current]))
        return seen

    def tests_without_timeout_dump(self):
        """Test binaries that start a runtime (they reach RUNTIME) without the fiber dump on
        a timeout (TIMEOUT_DUMP, which :runtime_testing brings too)."""
        missing = []
        for label, rule in sorted(self.ws.rules.items()):
            if rule.kind not in ("cc_test", "spindle_cc_test"):
                continue
            reached = self.closure_of(label)
            if RUNTIME in reached and TIMEOUT_DUMP not in reached:
                missing.append(label)
        return missing

    def public_headers(self):
        headers = list(PUBLIC_ROOT_HEADERS)
        for folder in PUBLIC_FOLDERS:
            for path in sorted((REPO / folder).glob("*.h")):
                headers.append("%s/%s" % (folder, path.name))
        return headers

    def installed_headers(self, public):
        """The public headers and every project header they include (g++ -MM)."""
        found = set(public)
        for header in public:
            result = subprocess.run(
                ["g++", "-std=c++17", "-MM", "-MG", "-I" + str(REPO), "-x", "c++",
                 str(REPO / header)],
                cwd=REPO, capture_output=True, text=True)
            if result.returncode != 0:
                sys.exit("g++ -MM %s failed:\n%s" % (header, result.stderr))
            words = result.stdout.replace("\\\n", " ").split(":", 1)[1].split()
            for word in words:
                path = os.path.relpath(os.path.normpath(os.path.join(REPO, word)), REPO)
                # (-MG names a header it could not find as if it were here: only the
                # project's own files count.)
                if (not path.startswith("..") and path.endswith(HEADER_SUFFIXES)
                        and (REPO / path).is_file()):
                    found.add(path)
        return sorted(found)

    def render(self):
        testing_bzl = hashlib.sha256((REPO / "bazel" / "testing.bzl").read_bytes())
        self.lines = [
            "# @generated by tools/bazel_to_cmake.py from the BUILD.bazel files: do not",
            "# edit. Rerun the script after changing a BUILD file; CI fails when this file",
            "# and the BUILD files disagree (tools/bazel_to_cmake.py --check).",
            # spindle_cc_test's twins are mirrored by hand (cmake/SpindleRules.cmake): a
            # change to the macro changes this line, so --check asks for a look.
            "# bazel/testing.bzl sha256 %s" % testing_bzl.hexdigest()[:16],
        ]
        for label in self.ordered():
            rule = self.ws.rules[label]
            self.lines.append("# %s" % label)
            self.write_rule(rule)
        libraries, third_party = self.library_closure()
        public = self.public_headers()
        head = self.lines[:4] + [""]
        body = self.lines[4:]
        lists = []
        lists += ["# The Debian libraries the targets below use (cmake/SpindleDependencies.cmake)."]
        lists += cmake_set("SPINDLE_THIRD_PARTY", sorted(self.third_party))
        lists += ["# What libspindle holds: %s and every library it depends on." %
                  ", ".join(LIBRARY_ROOTS)]
        lists += cmake_set("SPINDLE_LIBRARY_TARGETS", libraries)
        lists += cmake_set("SPINDLE_LIBRARY_THIRD_PARTY", third_party)
        lists += ["# The public headers (%s and the top level of %s)."
                  % (", ".join(PUBLIC_ROOT_HEADERS), ", ".join(PUBLIC_FOLDERS))]
        lists += cmake_set("SPINDLE_PUBLIC_HEADERS", public)
        lists += ["# What is installed: the public headers and every project header they include."]
        lists += cmake_set("SPINDLE_INSTALLED_HEADERS", self.installed_headers(public))
        return "\n".join(head + lists + [""] + body).rstrip("\n") + "\n"


def cmake_set(variable, values):
    return ["set(%s" % variable] + ["  %s" % cmake_quote(v) for v in values] + [")", ""]


def cmake_quote(value):
    value = str(value)
    if value and re.fullmatch(r"[A-Za-z0-9_.,/:=+\-${}<>@]+", value) and ";" not in value:
        return value
    return '"%s"' % value.replace("\\", "\\\\").replace('"', '\\"')


def targets_in(text):
    """The Bazel labels a rendered file has a CMake twin for (its "# //pkg:name" lines)."""
    return set(re.findall(r"^# (//\S+)$", text, re.M))


def check_version():
    """version.h's version and CHANGELOG.md's newest heading agree; "" or the error."""
    header = (REPO / "version.h").read_text()
    parts = []
    for part in ("MAJOR", "MINOR", "PATCH"):
        match = re.search(r"^#define SPINDLE_VERSION_%s (\d+)$" % part, header, re.M)
        if not match:
            return "version.h has no #define SPINDLE_VERSION_%s <number>" % part
        parts.append(match.group(1))
    version = ".".join(parts)
    heading = re.search(r"^## (\d+\.\d+\.\d+)", (REPO / "CHANGELOG.md").read_text(), re.M)
    if not heading:
        return "CHANGELOG.md has no version heading (## X.Y.Z)"
    if heading.group(1) != version:
        return ("CHANGELOG.md's newest heading is %s but version.h says %s"
                % (heading.group(1), version))
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="compare with the committed file instead of writing it")
    options = parser.parse_args()
    version_error = check_version()
    if version_error:
        print("version check FAILED: " + version_error)
        return 1
    workspace = Workspace()
    workspace.load_all()
    writer = Writer(workspace)
    missing = writer.tests_without_timeout_dump()
    for label in missing:
        print("%s starts a runtime (it reaches %s) but does not link %s: add it to the "
              "test's deps (or use :runtime_testing)" % (label, RUNTIME, TIMEOUT_DUMP))
    if missing:
        return 1
    text = writer.render()
    if not options.check:
        OUTPUT.write_text(text)
        print("wrote %s (%d rules)" % (OUTPUT.relative_to(REPO), len(workspace.rules)))
        return 0
    committed = OUTPUT.read_text() if OUTPUT.exists() else ""
    if committed == text:
        print("cmake drift check: %s matches the %d Bazel rules"
              % (OUTPUT.relative_to(REPO), len(workspace.rules)))
        return 0
    if committed.split("\n")[3:4] != text.split("\n")[3:4]:
        print("cmake drift: bazel/testing.bzl changed: check that cmake/SpindleRules.cmake's "
              "spindle_cc_test still makes the twins the macro makes, then rerun "
              "tools/bazel_to_cmake.py")
    want, have = targets_in(text), targets_in(committed)
    for label in sorted(want - have):
        print("cmake drift: %s is in the BUILD files but has no CMake twin in %s"
              % (label, OUTPUT.relative_to(REPO)))
    for label in sorted(have - want):
        print("cmake drift: %s has a CMake twin in %s but is in no BUILD file"
              % (label, OUTPUT.relative_to(REPO)))
    diff = list(difflib.unified_diff(committed.splitlines(), text.splitlines(),
                                     "committed", "from BUILD files", lineterm="", n=1))
    print("\n".join(diff[:80]))
    if len(diff) > 80:
        print("... (%d more lines)" % (len(diff) - 80))
    print("cmake drift check FAILED: %s differs from what the BUILD files give; run "
          "tools/bazel_to_cmake.py and commit the result" % OUTPUT.relative_to(REPO))
    return 1


if __name__ == "__main__":
    sys.exit(main())
