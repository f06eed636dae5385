#!/usr/bin/env python3
"""The symbol check: every global symbol a folder of runtime/ defines carries one of that
folder's prefixes, as the table "| folder | symbol prefixes |" of docs/architecture.md
lists them, and no prefix belongs to two folders.

A symbol belongs to the folder whose listed prefix is the longest one it starts with
(`ofa_mbconv_forward`: `ofa_mbconv_`, elastic/; `ofa_space_load`: `ofa_space_`, space/), so
a prefix may extend another folder's (`stereo_net_` of stereo/ beside `stereo_space_` of
space/) but the same prefix may not be listed twice. The symbols are read with nm from the
objects of the folder's sources (BUILD/obj/runtime/<folder>/<file>.o, what libmanta.a and
libmanta_engine.a are made of); every object must exist.

Fails (exit status 1, one line per problem) on: a symbol whose longest prefix is another
folder's or no folder's, a prefix listed by two folders, a folder without a row, a row
naming an unknown folder, a missing object.
Usage: tools/check_symbols.py BUILD_DIR [REPO_ROOT]   (default root: the current folder)
"""

import os
import re
import subprocess
import sys

TABLE_HEADER = re.compile(r'^\|\s*folder\s*\|\s*symbol prefixes\s*\|')
# Sources compiled only by board builds (the host build has no object of them).
BOARD_ONLY = {"runtime/monitor_http/server_none.c"}


def read_table(path, problems):
    """{folder: [prefixes]} from the table of docs/architecture.md."""
    rows, inside = {}, False
    for line in open(path, encoding="utf-8"):
        if TABLE_HEADER.match(line):
            inside = True
            continue
        if not inside:
            continue
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or set(cells[0]) <= set("-: "):
            continue
        folder = cells[0].strip("`").rstrip("/")
        rows[folder] = [p.strip().strip("`") for p in cells[1].split(",") if p.strip()]
    if not rows:
        problems.append(f"{path}: no table with the header '| folder | symbol prefixes |'")
    return rows


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    root = sys.argv[2] if len(sys.argv) > 2 else "."
    problems = []
    rows = read_table(os.path.join(root, "docs/architecture.md"), problems)
    owner = {}
    for folder, prefixes in rows.items():
        for p in prefixes:
            if p in owner:
                problems.append(f"prefix {p} is listed by {owner[p]}/ and {folder}/")
            owner[p] = folder
    runtime = os.path.join(root, "runtime")
    folders = sorted(d for d in os.listdir(runtime)
                     if os.path.isdir(os.path.join(runtime, d))
                     and any(f.endswith(".c") for f in os.listdir(os.path.join(runtime, d))))
    for f in rows:
        if f not in folders:
            problems.append(f"docs/architecture.md: symbol prefixes of '{f}/', not a folder of runtime/")
    objects = []  # (folder, source file name, object path)
    for folder in folders:
        if folder not in rows:
            problems.append(f"runtime/{folder}/: no row in the symbol prefix table of docs/architecture.md")
            continue
        for src in sorted(os.listdir(os.path.join(runtime, folder))):
            if not src.endswith(".c") or f"runtime/{folder}/{src}" in BOARD_ONLY:
                continue
            obj = os.path.join(build, "obj/runtime", folder, src[:-2] + ".o")
            if os.path.isfile(obj):
                objects.append((folder, src, obj))
            else:
                problems.append(f"{obj}: missing (build first)")
    syms = {obj: [] for _f, _s, obj in objects}
    if objects:  # one nm for every object: "OBJECT: ADDRESS TYPE NAME" lines
        out = subprocess.run(["nm", "-g", "--defined-only", "-A"] + [o for _f, _s, o in objects],
                             capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            path, _, rest = line.rpartition(": ") if ": " in line else line.partition(":")
            parts = rest.split()
            if len(parts) == 3 and path in syms:
                syms[path].append(parts[2])
    checked = 0
    for folder, src, obj in objects:
        for sym in syms[obj]:
            checked += 1
            best = max((p for p in owner if sym.startswith(p)), key=len, default=None)
            if best is None:
                problems.append(f"runtime/{folder}/{src}: {sym}: no folder's prefix "
                                f"({folder}/ has {', '.join(rows[folder])})")
            elif owner[best] != folder:
                problems.append(f"runtime/{folder}/{src}: {sym}: prefix {best} is "
                                f"{owner[best]}/'s ({folder}/ has {', '.join(rows[folder])})")
    for p in problems:
        print(p)
    if not problems:
        print(f"symbols: {checked} global symbols of {len(folders)} folders, each with its "
              f"folder's prefix")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
