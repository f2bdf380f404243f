#!/usr/bin/env python3
"""Fails on a comment that names a member which is not where the comment says it is.

A comment that says `SchedulingGroup::ChaosPick()` sends the reader to a class; once the
method moved or was renamed, the comment misleads. For every `Type::member` written in a
comment of a C++ file under the library's and tools' folders, where `Type` is a class,
struct or enum that this repository defines, the check looks for `member` in the code
(comments stripped) of the files that define `Type` and of their siblings with the same
stem (strategy_v2.h, strategy_v2.cc, strategy_v2_steal.cc): a member that is declared
there is found there. Chains (`TimerQueue::PushResult::kAdded`) are checked link by
link. Names of other libraries (std::, absl::, ...) are not ours and are skipped.

    tools/comment_names_check.py     # exit status 1 on any stale name

Prints one line per stale name: FILE:LINE: Type::member: no `member` in FILES."""

import os
import re
import sys

FOLDERS = ["fiber", "runtime", "sync", "timer", "io", "integrations", "benchmarks",
           "examples", "tests", "tools", "configs"]
SOURCE = re.compile(r"\.(h|cc)$")
DEFINITION = re.compile(r"\b(?:class|struct|enum class|enum|union)\s+(?:alignas\([^)]*\)\s+)?"
                        r"(?:ABSL_\w+(?:\([^)]*\))?\s+)?([A-Z]\w*)\b(?!\s*;)")
# Type::member[::member...], Type starting with a capital letter; not preceded by a
# namespace qualifier that is not ours (std::, absl::, ...).
CHAIN = re.compile(r"(?<![\w:])((?:[A-Z]\w*)(?:::~?\w+)+)")
WORD = re.compile(r"~?\w+")


def strip_comments(text):
    """(code, comments): code with comments and string literals blanked, and a list of
    (line, comment text)."""
    code = []
    comments = []
    i = 0
    line = 1
    n = len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            comments.append((line, text[i:j]))
            code.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            chunk = text[i:j]
            comments.append((line, chunk))
            code.append("".join("\n" if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j
        elif c == '"' and not (i > 0 and text[i - 1] == "'"):
            # A raw string R"(...)": to its end; else an ordinary literal.
            if i > 0 and text[i - 1] == "R" and text.startswith('"(', i):
                j = text.find(')"', i)
                j = n if j < 0 else j + 2
            else:
                j = i + 1
                while j < n and text[j] != '"' and text[j] != "\n":
                    j += 2 if text[j] == "\\" else 1
                j = min(j + 1, n)
            chunk = text[i:j]
            code.append("".join("\n" if ch == "\n" else " " for ch in chunk))
            line += chunk.count("\n")
            i = j
        else:
            if c == "\n":
                line += 1
            code.append(c)
            i += 1
    return "".join(code), comments


def stem_of(path):
    base = os.path.basename(path)
    base = SOURCE.sub("", base)
    return os.path.join(os.path.dirname(path), base)


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    os.chdir(root)
    files = []
    for top in FOLDERS:
        for dirpath, _, names in os.walk(top):
            files.extend(os.path.join(dirpath, name) for name in sorted(names)
                         if SOURCE.search(name))
    code = {}
    comments = {}
    for path in files:
        with open(path, encoding="utf-8") as f:
            code[path], comments[path] = strip_comments(f.read())
    # Type -> the files that define it.
    defined_in = {}
    for path in files:
        for m in DEFINITION.finditer(code[path]):
            defined_in.setdefault(m.group(1), set()).add(path)
    # The words of the code of each file's stem group.
    words_of_stem = {}
    for path in files:
        words_of_stem.setdefault(stem_of(path), set()).update(WORD.findall(code[path]))
    stems = sorted(words_of_stem)

    def words_near(paths):
        words = set()
        for path in paths:
            stem = stem_of(path)
            for other in stems:
                if other == stem or other.startswith(stem + "_"):
                    words |= words_of_stem[other]
        return words

    stale = 0
    checked = 0
    for path in files:
        for line, comment in comments[path]:
            for m in CHAIN.finditer(comment):
                parts = m.group(1).split("::")
                for owner, member in zip(parts, parts[1:]):
                    if owner not in defined_in:
                        break  # not ours (or not a type): nothing to check
                    member = member.lstrip("~")
                    if member == owner:
                        continue  # a constructor
                    checked += 1
                    if member not in words_near(defined_in[owner]):
                        where = ", ".join(sorted(defined_in[owner]))
                        print(f"{path}:{line}: {owner}::{member}: no `{member}` in {where} "
                              "or its siblings")
                        stale += 1
                        break
    print(f"comment_names_check: {checked} names in comments, {stale} stale")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
