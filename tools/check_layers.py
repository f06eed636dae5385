#!/usr/bin/env python3
"""The layering check: the folder dependency graph of runtime/ and tools/, derived
from the #include "..." lines, against the table in docs/architecture.md.

Every C file (.c, .h) under runtime/ and tools/ belongs to a folder: runtime/<name>/
is named <name> (core, space, ...), tools/<name>/ is named tools/<name>. An include
"dir/file.h" is resolved as the build resolves it (-Iruntime, then -Itools or
-Itests): runtime/dir/file.h, else tools/dir/file.h, else tests/dir/file.h, and
names the folder that holds the file (tests/<name> for a test helper). An include
without a folder ("cmd.h") is the including file's own folder or a generated
header, and adds no edge.

The table in docs/architecture.md has a header row "| folder | may include | notes |";
each row names a folder (`core/`, `tools/manta/`) and, comma-separated, the folders it
may include ("nothing" for none; text in parentheses is a remark).

A header whose name ends in _impl.h is internal to its folder: only that folder (and the
tests, which are not scanned) may include it.

Fails (exit status 1, one line per problem) on: an include of a folder the including
folder's row does not list, an include of another folder's _impl.h header, a folder without a row, a row naming an unknown folder,
an include with a folder that resolves to no file, and a cycle among the rows.
Usage: tools/check_layers.py [REPO_ROOT]   (default: the current folder)
"""

import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
TABLE_HEADER = re.compile(r'^\|\s*folder\s*\|\s*may include\s*\|')


def source_folders(root):
    """{folder name: [paths of its C files]} for runtime/* and tools/*."""
    folders = {}
    for top in ("runtime", "tools"):
        base = os.path.join(root, top)
        for dirpath, _dirs, files in os.walk(base):
            rel = os.path.relpath(dirpath, base)
            if rel == ".":
                continue
            first = rel.split(os.sep)[0]
            name = first if top == "runtime" else "tools/" + first
            for f in files:
                if f.endswith((".c", ".h")):
                    folders.setdefault(name, []).append(os.path.join(dirpath, f))
    return folders


def resolve(root, inc):
    """The folder name an include "dir/file" names, or None when no file matches."""
    first = inc.split("/")[0]
    for top, prefix in (("runtime", ""), ("tools", "tools/"), ("tests", "tests/")):
        if os.path.isfile(os.path.join(root, top, inc)):
            return prefix + first
    return None


def derive_edges(root, folders, problems):
    """{folder: {included folder: first file:line that includes it}}."""
    edges = {}
    for name, paths in sorted(folders.items()):
        out = edges.setdefault(name, {})
        for path in sorted(paths):
            with open(path, encoding="utf-8", errors="replace") as fh:
                for lineno, line in enumerate(fh, 1):
                    m = INCLUDE.match(line)
                    if not m or "/" not in m.group(1):
                        continue
                    where = "%s:%d" % (os.path.relpath(path, root), lineno)
                    target = resolve(root, m.group(1))
                    if target is None:
                        problems.append('%s: #include "%s" matches no file under runtime/, '
                                        "tools/ or tests/" % (where, m.group(1)))
                    elif target != name:
                        out.setdefault(target, where)
                        if m.group(1).endswith("_impl.h") and not target.startswith("tests/"):
                            problems.append('%s: #include "%s": an _impl.h header is internal to '
                                            "%s/" % (where, m.group(1), target))
    return edges


def parse_table(path, problems):
    """{folder: set of folders it may include} from the architecture page's table."""
    allowed = {}
    with open(path, encoding="utf-8") as fh:
        lines = fh.read().splitlines()
    start = next((i for i, l in enumerate(lines) if TABLE_HEADER.match(l)), None)
    if start is None:
        problems.append("%s: no table with the header '| folder | may include | notes |'" % path)
        return allowed
    for lineno, line in enumerate(lines[start + 2:], start + 3):
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2:
            problems.append("%s:%d: a row needs a folder and what it may include" % (path, lineno))
            continue
        folder = cells[0].strip("`").rstrip("/")
        deps = re.sub(r"\([^)]*\)", "", cells[1]).replace("`", "")
        names = set()
        for d in deps.split(","):
            d = d.strip().rstrip("/")
            if d and d != "nothing":
                names.add(d)
        if folder in allowed:
            problems.append("%s:%d: folder %s has two rows" % (path, lineno, folder))
        allowed[folder] = names
    return allowed


def find_cycle(allowed):
    """A list of folders forming a cycle among the rows, or None."""
    state = {}
    stack = []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for m in sorted(allowed.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state:
                c = visit(m)
                if c:
                    return c
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(allowed):
        if n not in state:
            c = visit(n)
            if c:
                return c
    return None


def main(argv):
    root = argv[1] if len(argv) > 1 else "."
    doc = os.path.join(root, "docs", "architecture.md")
    problems = []
    folders = source_folders(root)
    edges = derive_edges(root, folders, problems)
    allowed = parse_table(doc, problems)
    known = set(folders) | {n for n in allowed if n.startswith("tests/")}
    for folder, deps in sorted(allowed.items()):
        for d in sorted(deps | {folder}):
            if d not in known and not d.startswith("tests/"):
                problems.append("docs/architecture.md: the row of %s names %s, which is no folder "
                                "with C files under runtime/ or tools/" % (folder, d))
    for folder in sorted(folders):
        if folder not in allowed:
            problems.append("%s: no row in docs/architecture.md's table (| folder | may include "
                            "| notes |)" % folder)
            continue
        for target, where in sorted(edges.get(folder, {}).items()):
            if target not in allowed[folder]:
                problems.append("%s: %s includes %s, which its row in docs/architecture.md does "
                                "not list" % (where, folder, target))
    cycle = find_cycle(allowed)
    if cycle:
        problems.append("docs/architecture.md: the table has a cycle: %s" % " -> ".join(cycle))
    for p in problems:
        print(p)
    n_edges = sum(len(v) for v in edges.values())
    if problems:
        print("layering: %d problem(s)" % len(problems))
        return 1
    print("layering: %d folders, %d include edges, all in docs/architecture.md's table, no cycle"
          % (len(folders), n_edges))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
