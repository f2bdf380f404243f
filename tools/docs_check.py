#!/usr/bin/env python3
# Copyright 2026 The Spindle Authors.
"""Checks that the documentation cannot rot. Run from anywhere; exits 1 on a finding.

  tools/docs_check.py links      every relative link and #anchor in the project's
                                 Markdown files resolves (files, folders, headings,
                                 line numbers)
  tools/docs_check.py samples    every Markdown file with a C++ sample is one that
                                 //tests:readme_samples_test compiles (tests/BUILD.bazel's
                                 DOC_PAGES_WITH_SAMPLES; pages whose samples use gRPC:
                                 //integrations/grpc:grpc_doc_samples_test's
                                 GRPC_DOC_PAGES_WITH_SAMPLES); no C++ block is written so that
                                 the test cannot see it; and each sample compiles alone,
                                 with only its own includes
  tools/docs_check.py comments   every public declaration (the headers outside internal/
                                 folders) carries a doc comment, and every public class's
                                 comment says how it may be used across threads
  tools/docs_check.py            all three

Links: inline links and images (`[text](path "title")`, text and destination may wrap),
reference definitions (`[ref]: path`) and HTML `href`/`src`, outside code blocks, code
spans and HTML comments. Web links are not followed (CI has no network). A path is
relative to the page, or to the repository's root when it starts with `/`. An anchor
is a heading's GitHub anchor (its rendered text in lower case, everything but letters,
digits, spaces, `-` and `_` dropped, spaces made `-`, a repeat numbered as GitHub's
slugger does) or an explicit `<a id="...">`/`<a name="...">`; a link to a source file
may carry a line anchor (`#L10`, `#L10-L20`) within the file.

Samples: the samples test sees a block whose fence line is exactly ```c++ or ```cpp at
the start of a line (tests/readme_samples.sh); a C++ block fenced any other way (indented,
~~~, cc, an info string) is refused. The test compiles every sample in one file, so
here each is also compiled alone (g++ -fsyntax-only), to catch a sample that leans on
another's #include.

Comments: the declarations come from clang's AST of a file that includes every public
header (clang++ -fparse-all-comments, which attaches a plain `//` comment to the
declaration below it). Checked: classes, structs, enums, aliases, functions, methods,
constructors, public fields and variables in namespace spindle (not in `internal` or
`detail` namespaces, not private or protected, not compiler-made, not `= delete` or
`= default`, not destructors, not forward declarations). A comment counts when it ends
on the line above the declaration (or on its line). A declaration without a comment of
its own passes when it directly follows (no blank line) one that passes at the same
level and is of its kind: an overload of the same name (or an `operator=` after a
constructor, an operator after an operator), or a field or variable after a field or
variable (a block of fields under one comment). A `class` (not a plain
`struct`) must say in its own comment how it may be shared between threads (the word
"thread").
"""

import concurrent.futures
import html
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

import bazel_to_cmake  # the public headers, as the install and header_weight.py list them

REPO = pathlib.Path(__file__).resolve().parent.parent
SKIPPED_DIRS = {".git", "build", "node_modules"}
SAMPLE_FENCE = re.compile(r"^```(c\+\+|cpp)[ \t]*$")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([^\s`]*)(.*)$")
CPP_INFO = {"c++", "cpp", "cc", "cxx", "c", "hpp", "h"}


# --- Markdown ---------------------------------------------------------------------------

def markdown_files():
    """The project's Markdown files (tracked or not), outside build outputs."""
    files = []
    for dirpath, dirnames, filenames in os.walk(REPO):
        dirnames[:] = sorted(d for d in dirnames
                             if d not in SKIPPED_DIRS and not d.startswith(("bazel-", "."))
                             and not (pathlib.Path(dirpath) / d).is_symlink())
        files += [pathlib.Path(dirpath) / n for n in sorted(filenames) if n.endswith(".md")]
    return files


def render_inline(text):
    """A heading's text as GitHub renders it: code spans keep their content; links keep
    their text; HTML tags, emphasis markers and entities go."""
    out = []
    position = 0
    for span in re.finditer(r"(`+)(.+?)\1", text):
        out.append(render_plain(text[position:span.start()]))
        out.append(span.group(2).strip())
        position = span.end()
    out.append(render_plain(text[position:]))
    return "".join(out)


def render_plain(text):
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)
    text = re.sub(r"\*+", "", text)
    text = re.sub(r"(^|(?<=\W))_+|_+(?=\W|$)", "", text)
    return html.unescape(text)


def slug(heading):
    """GitHub's anchor for a heading (before numbering repeats)."""
    text = render_inline(heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


class MarkdownDoc:
    """One Markdown file, read once: its anchors and its prose paragraphs (outside code
    blocks and HTML comments), each as (first line number, text with code spans
    blanked)."""

    def __init__(self, path):
        self.path = path
        self.lines = path.read_text(encoding="utf-8").splitlines()
        self.anchors = set()
        self.paragraphs = []
        self.fences = []  # (line number, indent, marker, info string, rest)
        self._occurrences = {}
        self._parse()

    def _add_heading(self, text):
        # github-slugger: a repeat of "x" becomes "x-1", "x-2", ..., skipping taken ones.
        original = result = slug(text)
        while result in self._occurrences:
            self._occurrences[original] += 1
            result = "%s-%d" % (original, self._occurrences[original])
        self._occurrences[result] = 0
        self.anchors.add(result)

    def _parse(self):
        fence = None
        in_comment = False
        paragraph = []
        start = 0

        def flush():
            nonlocal paragraph
            if paragraph:
                self.paragraphs.append((start, blank_code_spans("\n".join(paragraph))))
            paragraph = []

        for number, line in enumerate(self.lines, 1):
            if fence is not None:
                match = FENCE.match(line)
                if match and match.group(2)[0] == fence[0] and \
                        len(match.group(2)) >= len(fence) and not match.group(3):
                    fence = None
                continue
            if in_comment:
                if "-->" in line:
                    in_comment = False
                    line = line[line.index("-->") + 3:]
                else:
                    continue
            match = FENCE.match(line)
            if match:
                flush()
                fence = match.group(2)
                self.fences.append((number, match.group(1), match.group(2),
                                    match.group(3), match.group(4)))
                continue
            while "<!--" in line:
                head, _, tail = line.partition("<!--")
                if "-->" in tail:
                    line = head + tail[tail.index("-->") + 3:]
                else:
                    line = head
                    in_comment = True
            for explicit in re.finditer(r"<a\s+(?:id|name)=\"([^\"]+)\"", line):
                self.anchors.add(explicit.group(1))
            heading = re.match(r" {0,3}#{1,6}(?:\s+(.*?))?(?:\s+#+)?\s*$", line)
            if heading:
                flush()
                self._add_heading(heading.group(1) or "")
                continue
            setext = re.match(r" {0,3}(=+|-+)\s*$", line)
            if setext and paragraph and not paragraph[-1].lstrip().startswith("|"):
                self._add_heading(" ".join(p.strip() for p in paragraph))
                flush()
                continue
            if not line.strip():
                flush()
                continue
            if not paragraph:
                start = number
            paragraph.append(line)
        flush()


def blank_code_spans(text):
    """Code spans (which may wrap) replaced by spaces, newlines kept."""
    return re.sub(r"(`+)(?:(?!\1).)+?\1",
                  lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.S)


INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"                  # [text], one level of brackets
    r"\(\s*(<[^>\n]*>|(?:[^\s()]|\([^\s()]*\))+)"      # (destination
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)",  #  "title")
    re.S)
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
HTML_TARGET = re.compile(r"<(?:a|img)\s[^>]*?(?:href|src)=\"([^\"]*)\"", re.I | re.S)


def check_links():
    problems = []
    count = 0
    docs = {}

    def doc(path):
        if path not in docs:
            docs[path] = MarkdownDoc(path)
        return docs[path]

    for md in markdown_files():
        rel = md.relative_to(REPO)
        for first, text in doc(md).paragraphs:
            targets = [(m.start(), m.group(1)) for pattern in (INLINE_LINK, REFERENCE,
                                                                HTML_TARGET)
                       for m in pattern.finditer(text)]
            for offset, target in sorted(targets):
                target = target.strip("<>")
                if re.match(r"[a-z][a-z0-9+.-]*:", target) or not target:
                    continue  # http:, mailto:, ...
                count += 1
                number = first + text.count("\n", 0, offset)
                problem = check_target(md, target, doc)
                if problem:
                    problems.append("%s:%d: link %s: %s" % (rel, number, target, problem))
    return problems, "%d relative links checked" % count


def check_target(md, target, doc):
    path_part, _, anchor = target.partition("#")
    if not path_part:
        dest = md
    elif path_part.startswith("/"):
        dest = (REPO / path_part.lstrip("/")).resolve()
    else:
        dest = (md.parent / path_part).resolve()
    if not dest.exists():
        return "no such file or folder %s" % os.path.relpath(dest, REPO)
    if not anchor:
        return None
    if dest.suffix == ".md":
        if anchor not in doc(dest).anchors:
            return "%s has no heading with anchor #%s" % (os.path.relpath(dest, REPO),
                                                          anchor)
        return None
    lines = re.fullmatch(r"L(\d+)(?:-L(\d+))?", anchor)
    if dest.is_dir() or not lines:
        return "a link into %s takes a line anchor (#L12) only" % os.path.relpath(dest,
                                                                                 REPO)
    length = len(dest.read_text(encoding="utf-8", errors="replace").splitlines())
    last = int(lines.group(2) or lines.group(1))
    if not 1 <= int(lines.group(1)) <= last <= length:
        return "%s has %d lines" % (os.path.relpath(dest, REPO), length)
    return None


# --- Samples ----------------------------------------------------------------------------

# The lists of pages whose samples a test compiles: (BUILD file, variable). Pages whose
# samples use gRPC are compiled by the gRPC integration's test, with its dependencies.
SAMPLE_LISTS = [
    ("tests/BUILD.bazel", "DOC_PAGES_WITH_SAMPLES"),
    ("integrations/grpc/BUILD.bazel", "GRPC_DOC_PAGES_WITH_SAMPLES"),
]


def listed_sample_pages():
    """The pages SAMPLE_LISTS name (comments dropped); None if a list is missing."""
    listed = set()
    for build_file, variable in SAMPLE_LISTS:
        build = (REPO / build_file).read_text()
        match = re.search(r"^%s = \[(.*?)^\]" % variable, build, re.S | re.M)
        if not match:
            return None
        for line in match.group(1).splitlines():
            for label in re.findall(r"\"([^\"]+)\"", line.split("#", 1)[0]):
                package, _, name = label.lstrip("/").partition(":")
                listed.add(str(pathlib.PurePosixPath(package) / name) if package else name)
    return listed


def generate_sample_protos(out):
    """The C++ code of docs/*.proto (the services samples call) into `out`, as the
    build generates it (bazel/grpc.bzl), so that a sample's #include of it resolves."""
    for proto in sorted((REPO / "docs").glob("*.proto")):
        subprocess.run(["protoc", "-I.", "--cpp_out=" + out, "--grpc_out=" + out,
                        "--plugin=protoc-gen-grpc=/usr/bin/grpc_cpp_plugin",
                        str(proto.relative_to(REPO))], cwd=REPO, check=True)


def compile_alone(source, generated):
    """None, or why `source` (one sample, as readme_samples.sh --alone writes it) does
    not compile."""
    where = re.search(r"// Sample \d+: the block at (\S+)", source.read_text()).group(1)
    result = subprocess.run(
        ["g++", "-std=c++17", "-I", str(REPO), "-I", generated, "-Wall", "-Wextra",
         "-Werror", "-fsyntax-only", str(source)], capture_output=True, text=True, cwd=REPO)
    if result.returncode == 0:
        return None
    return "%s: does not compile alone (an #include missing?):\n%s" % (
        where, result.stderr.replace(str(source), where)[-2000:])


def check_samples():
    listed = listed_sample_pages()
    if listed is None:
        return ["no %s list in %s" % (variable, build_file)
                for build_file, variable in SAMPLE_LISTS], ""
    problems = []
    pages = []
    for md in markdown_files():
        rel = str(md.relative_to(REPO))
        if rel.startswith("examples/"):
            continue  # an example project's own README: its sources are built instead
        for number, indent, marker, info, rest in MarkdownDoc(md).fences:
            seen = indent == "" and marker == "```" and info.lower() in ("c++", "cpp") \
                and not rest.strip()
            if info.lower() in CPP_INFO and not seen:
                problems.append("%s:%d: a C++ block the samples test cannot see: fence it "
                                "with ```c++ at the start of a line" % (rel, number))
        if not any(SAMPLE_FENCE.match(l) for l in MarkdownDoc(md).lines):
            continue
        pages.append(rel)
        if rel not in listed:
            problems.append("%s has C++ samples but is in no list of pages with samples "
                            "(tests/BUILD.bazel's DOC_PAGES_WITH_SAMPLES, or "
                            "integrations/grpc/BUILD.bazel's GRPC_DOC_PAGES_WITH_SAMPLES for "
                            "a page whose samples use gRPC): add it" % rel)
    for rel in sorted(listed - {str(m.relative_to(REPO)) for m in markdown_files()}):
        problems.append("a list of pages with samples names %s, which does not exist"
                        % rel)
    with tempfile.TemporaryDirectory() as alone, tempfile.TemporaryDirectory() as generated:
        generate_sample_protos(generated)
        subprocess.run(["bash", str(REPO / "tests" / "readme_samples.sh"), "--alone", alone]
                       + pages, cwd=REPO, check=True)
        sources = sorted(pathlib.Path(alone).glob("sample_*.cc"))
        with concurrent.futures.ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
            problems += [p for p in pool.map(lambda src: compile_alone(src, generated),
                                             sources) if p]
    return problems, "%d samples in %d files, each compiles alone" % (len(sources),
                                                                     len(pages))


# --- Doc comments ----------------------------------------------------------------------

RECORD_KINDS = {"CXXRecordDecl", "ClassTemplateDecl"}
TEMPLATE_KINDS = {"ClassTemplateDecl", "FunctionTemplateDecl", "TypeAliasTemplateDecl"}
FUNCTION_KINDS = {"FunctionDecl", "CXXMethodDecl", "CXXConstructorDecl",
                  "CXXConversionDecl", "FunctionTemplateDecl"}
DATA_KINDS = {"FieldDecl", "VarDecl"}
CHECKED_KINDS = RECORD_KINDS | FUNCTION_KINDS | DATA_KINDS | {
    "EnumDecl", "TypeAliasDecl", "TypedefDecl", "TypeAliasTemplateDecl"}
SCOPE_KINDS = {"NamespaceDecl", "LinkageSpecDecl"} | RECORD_KINDS


def comment_text(comment):
    """The words of one FullComment."""
    parts = []

    def walk(node):
        if "text" in node and node.get("kind", "").endswith("Comment"):
            parts.append(node["text"])
        for child in node.get("inner", []):
            walk(child)
    walk(comment)
    return " ".join(parts)


class Located:
    """The file and line clang's JSON dump leaves out when unchanged: fed every node's
    locations in the order the dumper printed them."""

    def __init__(self):
        self.file = None
        self.line = None

    def update(self, value):
        """A node's own locations (not its children's)."""
        if isinstance(value, dict):
            if "offset" in value:
                self.file = value.get("file", self.file)
                self.line = value.get("line", self.line)
            for key, item in value.items():
                if key not in ("inner", "includedFrom"):
                    self.update(item)
        elif isinstance(value, list):
            for item in value:
                self.update(item)

    def walk(self, node):
        """A node and everything under it."""
        self.update(node)
        for child in node.get("inner", []):
            self.walk(child)


class Declaration:
    """What the group rule needs of a checked declaration."""

    def __init__(self, kind, name, begin, end, passes):
        self.kind, self.name, self.begin, self.end, self.passes = (kind, name, begin, end,
                                                                    passes)

    def covers(self, other):
        """Whether this one's comment may stand for `other`, the declaration right below."""
        if not self.passes or self.end is None or other.begin is None:
            return False
        if other.begin - self.end > 1:
            return False
        if self.kind in FUNCTION_KINDS and other.kind in FUNCTION_KINDS:
            # An overload set; a constructor's assignment twin; a run of operators.
            return (self.name == other.name
                    or (self.kind == "CXXConstructorDecl" and other.name == "operator=")
                    or (self.name.startswith("operator") and
                        other.name.startswith("operator")))
        return self.kind in DATA_KINDS and other.kind in DATA_KINDS


class CommentChecker:
    """Walks clang's dump of the public headers and records each finding."""

    def __init__(self, headers):
        self.public = {os.path.normpath(h) for h in headers}
        self.problems = {}
        self.checked = 0

    def relative(self, name):
        if not name:
            return None
        return os.path.normpath(os.path.relpath(name, REPO) if os.path.isabs(name) else name)

    def visit(self, node, located, public, role, siblings):
        """Walks `node` (declared in scope `siblings`); returns the end line of its own
        doc comment, or None."""
        kind = node.get("kind", "")
        located.update(node.get("loc", {}))
        where = self.relative(located.file)
        located.update({"begin": node.get("range", {}).get("begin", {})})
        begin = located.line
        located.update({"end": node.get("range", {}).get("end", {})})
        end = located.line
        name = node.get("name", "")
        if kind == "NamespaceDecl" and name in ("internal", "detail", ""):
            public = False
        comment_end, templated_comment_end = self.visit_children(node, kind, located,
                                                                  public)
        if comment_end is None:
            comment_end = templated_comment_end
        if not self.is_checked(node, kind, public, role, where):
            return comment_end
        self.checked += 1
        documented = comment_end is not None and begin is not None and \
            comment_end >= begin - 1
        declaration = Declaration(kind, name, begin, end, documented)
        if documented:
            self.check_thread_statement(node, kind, name, where, begin)
        elif siblings and siblings[-1].covers(declaration):
            declaration.passes = True
        else:
            self.problems[(where, begin)] = "%s:%s: %s %s has no doc comment" % (
                where, begin, kind.replace("CXX", "").replace("Decl", "").lower(),
                name or "(unnamed)")
        siblings.append(declaration)
        return comment_end

    def visit_children(self, node, kind, located, public):
        """Children in dump order. Returns (end line of node's own FullComment, end line
        of its templated declaration's)."""
        comment_end = templated_comment_end = None
        members = []
        # A class's members are private until an access specifier says otherwise.
        access_public = not (kind == "CXXRecordDecl" and node.get("tagUsed") == "class")
        for child in node.get("inner", []):
            child_kind = child.get("kind", "")
            if child_kind == "FullComment":
                located.update(child)
                comment_end = located.line
                for part in child.get("inner", []):
                    located.walk(part)
            elif child_kind == "AccessSpecDecl":
                located.walk(child)
                access_public = child.get("access") == "public"
            elif child_kind.endswith(("Comment", "Stmt", "Expr")):
                located.walk(child)  # bodies and initializers: their locations only
            elif kind in TEMPLATE_KINDS and child_kind in CHECKED_KINDS:
                templated_comment_end = self.visit(child, located, public, "templated", [])
            elif kind in SCOPE_KINDS:
                member_public = public and (kind != "CXXRecordDecl" or access_public)
                self.visit(child, located, member_public, "member", members)
            else:
                self.visit(child, located, False, "other", [])
        return comment_end, templated_comment_end

    def is_checked(self, node, kind, public, role, where):
        if kind not in CHECKED_KINDS or not public or role != "member" or \
                where not in self.public:
            return False
        if node.get("isImplicit") or node.get("explicitlyDeleted") or \
                node.get("explicitlyDefaulted"):
            return False
        record = node
        if kind == "ClassTemplateDecl":
            record = next((c for c in node.get("inner", [])
                           if c.get("kind") == "CXXRecordDecl"), {})
        if kind in RECORD_KINDS and not record.get("completeDefinition"):
            return False  # a forward declaration
        return True

    def check_thread_statement(self, node, kind, name, where, begin):
        record = node
        if kind == "ClassTemplateDecl":
            record = next((c for c in node.get("inner", [])
                           if c.get("kind") == "CXXRecordDecl"), {})
        if kind not in RECORD_KINDS or record.get("tagUsed") != "class":
            return
        comments = [c for n in (node, record) for c in n.get("inner", [])
                    if c.get("kind") == "FullComment"]
        if not any(re.search(r"thread", comment_text(c), re.I) for c in comments):
            self.problems[(where, begin)] = (
                "%s:%s: class %s: its comment does not say how it may be used across "
                "threads" % (where, begin, name))


def check_comments():
    headers = bazel_to_cmake.Writer(None).public_headers()
    if shutil.which("clang++") is None:
        return ["the comments check needs clang++: tools/install_deps.sh clang"], ""
    with tempfile.TemporaryDirectory() as tmp:
        unit = pathlib.Path(tmp) / "public_headers.cc"
        unit.write_text("".join('#include "%s"\n' % h for h in headers))
        result = subprocess.run(
            ["clang++", "-std=c++17", "-I", str(REPO), "-fsyntax-only",
             "-fparse-all-comments", "-Xclang", "-ast-dump=json",
             "-Xclang", "-ast-dump-filter", "-Xclang", "spindle", str(unit)],
            capture_output=True, text=True, cwd=REPO)
    if result.returncode != 0:
        return ["clang++ could not parse the public headers:\n" + result.stderr[-4000:]], ""
    checker = CommentChecker(headers)
    decoder = json.JSONDecoder()
    position = 0
    while True:
        start = result.stdout.find("{", position)
        if start < 0:
            break
        dump, position = decoder.raw_decode(result.stdout, start)
        # Each dump is printed by a fresh dumper: its first location names its file.
        checker.visit(dump, Located(), True, "member", [])
    order = sorted(checker.problems, key=lambda k: (k[0] or "", k[1] or 0))
    return ([checker.problems[k] for k in order],
            "%d public declarations in %d headers checked" % (checker.checked,
                                                              len(headers)))


def main(argv):
    commands = argv[1:] or ["links", "samples", "comments"]
    checks = {"links": check_links, "samples": check_samples, "comments": check_comments}
    failed = False
    for command in commands:
        if command not in checks:
            sys.exit("docs_check.py: unknown check %r (accepted: links, samples, comments)"
                     % command)
        problems, summary = checks[command]()
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
