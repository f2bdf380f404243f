#!/usr/bin/env python3
# Copyright 2026 The Spindle Authors.
"""Checks that the documentation cannot rot. Run from anywhere; exits 1 on a finding.

  tools/docs_check.py links      every relative link and #anchor in the project's
                                 Markdown files resolves (files, folders, headings)
  tools/docs_check.py samples    every Markdown file with a C++ sample is one that
                                 //tests:readme_samples_test compiles (tests/BUILD.bazel's
                                 DOC_PAGES_WITH_SAMPLES)
  tools/docs_check.py comments   every public declaration (the headers outside internal/
                                 folders) carries a doc comment, and every public class's
                                 comment says how it may be used across threads
  tools/docs_check.py            all three

Links: `[text](path)`, `[text](path#anchor)`, `[text](#anchor)` and images, outside code
blocks and code spans. An anchor is a heading's GitHub slug (lower case; everything but
letters, digits, spaces, `-` and `_` dropped; spaces become `-`; a repeated slug gets
`-1`, `-2`, ...) or an explicit `<a id="...">`/`<a name="...">`. Links to source files
may carry a line anchor (`#L10`). Web links are not followed (CI has no network).

Comments: the declarations come from clang's AST of a file that includes every public
header (clang++ -fparse-all-comments, which attaches a plain `//` comment to the
declaration right below it). Checked: classes, structs, enums, aliases, functions,
methods, constructors, public fields and variables in namespace spindle (not in
`internal` or `detail` namespaces, not private or protected, not compiler-made,
not `= delete`/`= default`, not destructors). A declaration without a comment of its own
passes when it directly follows (no blank line) one that passes at the same level: an
overload set or a block of fields under one comment. A `class` (not a plain `struct`)
must say in its comment how it may be shared between threads (the word "thread").
"""

import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

REPO = pathlib.Path(__file__).resolve().parent.parent
PUBLIC_DIRS = ("fiber", "runtime", "sync", "timer", "io")
SKIPPED_DIRS = {".git", "build", "node_modules"}


# --- Markdown files --------------------------------------------------------------------

def markdown_files():
    """The project's Markdown files (tracked or not), outside build outputs."""
    files = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith(("bazel-", "."))
                             and not (pathlib.Path(dirpath) / d).is_symlink())
        for name in sorted(filenames):
            if name.endswith(".md"):
                files.append(pathlib.Path(dirpath) / name)
    return files


def prose_lines(text):
    """(line number, line) outside fenced code blocks, with code spans blanked."""
    fence = None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.lstrip()
        marker = re.match(r"(`{3,}|~{3,})", stripped)
        if marker:
            if fence is None:
                fence = marker.group(1)[0] * len(marker.group(1))
                continue
            if stripped.startswith(fence):
                fence = None
                continue
        if fence is not None:
            continue
        yield number, re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def slug(heading):
    """GitHub's anchor for a heading's text."""
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(path, cache={}):
    if path not in cache:
        found = set()
        seen = {}
        text = path.read_text(encoding="utf-8")
        fence = None
        for line in text.splitlines():
            stripped = line.lstrip()
            marker = re.match(r"(`{3,}|~{3,})", stripped)
            if marker:
                fence = None if fence and stripped.startswith(fence) else (
                    fence or marker.group(1))
                continue
            if fence:
                continue
            heading = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
            if heading:
                base = slug(heading.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else "%s-%d" % (base, count))
            for explicit in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", line):
                found.add(explicit.group(1))
        cache[path] = found
    return cache[path]


LINK = re.compile(r"!?\[(?:[^\]\[]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def check_links():
    problems = []
    count = 0
    for md in markdown_files():
        rel = md.relative_to(REPO)
        for number, line in prose_lines(md.read_text(encoding="utf-8")):
            for match in LINK.finditer(line):
                target = match.group(1)
                if re.match(r"[a-z][a-z0-9+.-]*:", target):  # http:, mailto:, ...
                    continue
                count += 1
                path_part, _, anchor = target.partition("#")
                where = "%s:%d: link %s" % (rel, number, target)
                dest = (md.parent / path_part).resolve() if path_part else md
                if path_part and not dest.exists():
                    problems.append("%s: no such file or folder %s"
                                    % (where, os.path.relpath(dest, REPO)))
                    continue
                if not anchor:
                    continue
                if dest.suffix == ".md":
                    if anchor not in anchors_of(dest):
                        problems.append("%s: %s has no heading with anchor #%s"
                                        % (where, os.path.relpath(dest, REPO), anchor))
                elif dest.is_dir() or not re.fullmatch(r"L\d+(-L\d+)?", anchor):
                    problems.append("%s: a link into %s takes a line anchor (#L12) only"
                                    % (where, os.path.relpath(dest, REPO)))
    return problems, "%d relative links checked" % count


# --- Samples ----------------------------------------------------------------------------

def check_samples():
    build = (REPO / "tests" / "BUILD.bazel").read_text()
    match = re.search(r"^DOC_PAGES_WITH_SAMPLES = \[(.*?)\]", build, re.S | re.M)
    if not match:
        return ["tests/BUILD.bazel: no DOC_PAGES_WITH_SAMPLES list (readme_samples_cc's "
                "srcs)"], ""
    listed = set()
    for label in re.findall(r"\"([^\"]+)\"", match.group(1)):
        package, _, name = label.lstrip("/").partition(":")
        listed.add(str(pathlib.PurePosixPath(package) / name) if package else name)
    problems = []
    with_samples = 0
    for md in markdown_files():
        rel = str(md.relative_to(REPO))
        text = md.read_text(encoding="utf-8")
        if not re.search(r"^```(c\+\+|cpp)[ \t]*$", text, re.M):
            continue
        if rel.startswith("examples/"):
            continue  # an example project's own README: its sources are built instead
        with_samples += 1
        if rel not in listed:
            problems.append("%s has C++ samples but is not in tests/BUILD.bazel's "
                            "DOC_PAGES_WITH_SAMPLES (add it)" % rel)
    for rel in sorted(listed - {str(m.relative_to(REPO)) for m in markdown_files()}):
        problems.append("tests/BUILD.bazel: DOC_PAGES_WITH_SAMPLES lists %s, which does "
                        "not exist" % rel)
    return problems, "%d files with C++ samples, all compiled" % with_samples


# --- Doc comments ----------------------------------------------------------------------

RECORD_KINDS = {"CXXRecordDecl", "ClassTemplateDecl"}
CHECKED_KINDS = RECORD_KINDS | {
    "FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl", "CXXConversionDecl",
    "FunctionTemplateDecl", "EnumDecl", "TypeAliasDecl", "TypedefDecl",
    "TypeAliasTemplateDecl", "VarDecl", "FieldDecl",
}
SCOPE_KINDS = {"NamespaceDecl", "LinkageSpecDecl"} | RECORD_KINDS


def public_headers():
    headers = sorted(str(p.relative_to(REPO)) for d in PUBLIC_DIRS
                     for p in (REPO / d).glob("*.h"))
    return headers + ["version.h"]


def comment_text(node):
    parts = []

    def walk(n):
        if isinstance(n, dict):
            if "text" in n and n.get("kind", "").endswith("Comment"):
                parts.append(n["text"])
            for child in n.get("inner", []):
                walk(child)
    walk(node)
    return " ".join(parts)


class Located:
    """Tracks the file and line that clang's JSON dump leaves out when unchanged."""

    def __init__(self):
        self.file = None
        self.line = None

    def update(self, value):
        """Walks a node's locations in the order the dumper printed them."""
        if isinstance(value, dict):
            if "offset" in value:
                if "file" in value:
                    self.file = value["file"]
                if "line" in value:
                    self.line = value["line"]
            for key, item in value.items():
                if key in ("inner", "includedFrom"):
                    continue
                self.update(item)
        elif isinstance(value, list):
            for item in value:
                self.update(item)


def check_comments():
    headers = public_headers()
    if shutil.which("clang++") is None:
        return ["the comments check needs clang++ (Debian's clang: apt-get install clang; "
                "tools/thread_safety_check.sh installs it)"], ""
    with tempfile.TemporaryDirectory() as tmp:
        tu = pathlib.Path(tmp) / "public_headers.cc"
        tu.write_text("".join('#include "%s"\n' % h for h in headers))
        result = subprocess.run(
            ["clang++", "-std=c++17", "-I", str(REPO), "-fsyntax-only",
             "-fparse-all-comments", "-Xclang", "-ast-dump=json",
             "-Xclang", "-ast-dump-filter", "-Xclang", "spindle", str(tu)],
            capture_output=True, text=True, cwd=REPO)
    if result.returncode != 0:
        return ["clang++ could not parse the public headers:\n" + result.stderr[-4000:]], ""
    decoder = json.JSONDecoder()
    text = result.stdout
    dumps = []
    position = 0
    while True:
        start = text.find("{", position)
        if start < 0:
            break
        node, position = decoder.raw_decode(text, start)
        dumps.append(node)

    public = {os.path.normpath(h) for h in headers}
    problems = {}
    checked = [0]

    def file_of(name):
        if not name:
            return None
        return os.path.normpath(os.path.relpath(name, REPO) if os.path.isabs(name) else name)

    def visit(node, located, scope_public, parent_key, siblings):
        """Walks node (its locations fed to `located` first); appends checked
        declarations to siblings as (begin, end, passes)."""
        kind = node.get("kind", "")
        located.update(node.get("loc", {}))
        decl_file = file_of(located.file)
        located.update({"begin": node.get("range", {}).get("begin", {})})
        begin = located.line
        located.update({"end": node.get("range", {}).get("end", {})})
        end = located.line
        name = node.get("name", "")
        if kind == "NamespaceDecl" and (name in ("internal", "detail", "")):
            scope_public = False
        if node.get("access") in ("private", "protected"):
            scope_public = False
        children_into = None
        if kind in SCOPE_KINDS:
            children_into = []
        entry_passes = None
        documented = any(c.get("kind") == "FullComment" for c in node.get("inner", []))
        if kind in ("ClassTemplateDecl", "FunctionTemplateDecl", "TypeAliasTemplateDecl"):
            templated = [c for c in node.get("inner", [])
                         if c.get("kind") in CHECKED_KINDS]
            documented = documented or any(
                any(g.get("kind") == "FullComment" for g in t.get("inner", []))
                for t in templated)
        skip = (node.get("isImplicit") or node.get("explicitlyDeleted")
                or node.get("explicitlyDefaulted") or kind == "CXXDestructorDecl"
                or (kind == "CXXRecordDecl" and not node.get("completeDefinition")
                    and parent_key != "template"))
        if (kind in CHECKED_KINDS and scope_public and not skip
                and decl_file in public and parent_key != "template"):
            checked[0] += 1
            entry_passes = documented
            record = kind in RECORD_KINDS
            if documented and record:
                inner = node
                if kind == "ClassTemplateDecl":
                    inner = next((c for c in node.get("inner", [])
                                  if c.get("kind") == "CXXRecordDecl"), node)
                tag = inner.get("tagUsed")
                if tag == "class" and not re.search(r"thread", comment_text(node),
                                                    re.I):
                    problems[(decl_file, begin)] = (
                        "%s:%s: class %s: its comment does not say how it may be used "
                        "across threads" % (decl_file, begin, name))
            if not documented:
                previous = siblings[-1] if siblings else None
                if previous and previous[2] and previous[1] is not None and begin \
                        is not None and begin - previous[1] <= 1:
                    entry_passes = True  # one comment over a group
                else:
                    problems[(decl_file, begin)] = (
                        "%s:%s: %s %s has no doc comment"
                        % (decl_file, begin, kind.replace("CXX", "").replace("Decl", "")
                           .lower(), name or "(unnamed)"))
            siblings.append((begin, end, entry_passes))
        # Children: a scope's declarations, a template's templated declaration. A class's
        # members are private until an access specifier says otherwise.
        access_public = not (kind == "CXXRecordDecl" and node.get("tagUsed") == "class")
        for child in node.get("inner", []):
            ckind = child.get("kind", "")
            if ckind == "AccessSpecDecl":
                access_public = child.get("access") == "public"
                located.update(child)
                continue
            if ckind.endswith("Comment") or ckind.endswith("Stmt") or ckind.endswith("Expr"):
                # Skip comments, bodies and initializers, feeding their locations.
                located.update(child)
                continue
            if kind in ("ClassTemplateDecl", "FunctionTemplateDecl",
                        "TypeAliasTemplateDecl") and ckind in CHECKED_KINDS:
                visit(child, located, scope_public, "template", [])
                continue
            if children_into is not None:
                member_public = scope_public and (kind != "CXXRecordDecl" or access_public)
                visit(child, located, member_public, "scope", children_into)
            else:
                visit(child, located, False, "other", [])

    for dump in dumps:
        located = Located()
        top = []
        visit(dump, located, True, "scope", top)
    ordered = [problems[k] for k in sorted(problems, key=lambda k: (k[0] or "", k[1] or 0))]
    return ordered, "%d public declarations in %d headers checked" % (checked[0], len(headers))


def main(argv):
    commands = argv[1:] or ["links", "samples", "comments"]
    failed = False
    for command in commands:
        check = {"links": check_links, "samples": check_samples,
                 "comments": check_comments}.get(command)
        if check is None:
            sys.exit("docs_check.py: unknown check %r (accepted: links, samples, comments)"
                     % command)
        problems, summary = check()
        for problem in problems:
            print(problem)
        if problems:
            failed = True
            print("docs_check.py %s: %d problem(s)" % (command, len(problems)))
        else:
            print("docs_check.py %s: ok, %s" % (command, summary))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
