#!/usr/bin/env python3
"""Checks the layer rule of src/README.md: a layer includes and links only the layers its row
of the table allows.

Reads the table ("| layer | may include |") from src/README.md, then
  - every `#include "x/..."` in src/<layer>/ (any depth) whose x is a layer must name the layer
    itself or one it may include; tests (*_test.cc) may also include server/;
  - every cairn_<y> in the DEPS of `cairn_layer(cairn_<x> ...)` in CMakeLists.txt must be a
    layer x may include, and every layer has a row.
Prints each violation with its file and line, and a closing line; exits 1 on any violation.
"""
import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/')
TEST_EXTRA = {"server"}


def read_table(readme):
    allowed, in_table = {}, False
    with open(readme, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if line.startswith("| layer | may include |"):
                in_table = True
                continue
            if not in_table:
                continue
            if not line.startswith("|"):
                break
            if set(cells[0]) <= {"-"}:
                continue  # the separator row
            allowed[cells[0]] = {d.strip() for d in cells[1].split(",") if d.strip()}
    return allowed


def check_includes(src, allowed):
    problems, files = [], 0
    for layer in sorted(allowed):
        top = os.path.join(src, layer)
        for root, _, names in os.walk(top):
            for name in sorted(names):
                if not name.endswith((".cc", ".h")):
                    continue
                files += 1
                path = os.path.join(root, name)
                may = allowed[layer] | {layer}
                if name.endswith("_test.cc"):
                    may = may | TEST_EXTRA
                with open(path, encoding="utf-8", errors="replace") as f:
                    for number, line in enumerate(f, 1):
                        m = INCLUDE.match(line)
                        if m and m.group(1) in allowed and m.group(1) not in may:
                            problems.append("%s:%d: %s/ includes %s/, a layer above it or beside it"
                                            % (os.path.relpath(path), number, layer, m.group(1)))
    # A folder under src/ with code but no row would escape the check.
    for entry in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, entry)) and entry not in allowed:
            problems.append("src/%s/: a folder with no row in the layer table" % entry)
    return problems, files


def check_cmake(cmakelists, allowed):
    problems = []
    text = open(cmakelists, encoding="utf-8").read()
    for m in re.finditer(r"cairn_layer\(\s*cairn_([a-z_]+)(.*?)\)", text, re.S):
        layer, body = m.group(1), m.group(2)
        if layer not in allowed:
            problems.append("CMakeLists.txt: cairn_%s has no row in the layer table" % layer)
            continue
        deps = body.split("DEPS", 1)[1] if "DEPS" in body else ""
        for dep in re.findall(r"\bcairn_([a-z_]+)\b", deps):
            if dep not in allowed[layer]:
                problems.append("CMakeLists.txt: cairn_%s links cairn_%s, which its row does not allow"
                                % (layer, dep))
    return problems


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    args = ap.parse_args()
    root = os.path.abspath(args.root)
    allowed = read_table(os.path.join(root, "src", "README.md"))
    if not allowed:
        print("layers: no layer table found in src/README.md")
        return 1
    unknown = {d for deps in allowed.values() for d in deps if d not in allowed}
    problems = ["src/README.md: '%s' is allowed but has no row" % d for d in sorted(unknown)]
    include_problems, files = check_includes(os.path.join(root, "src"), allowed)
    problems += include_problems + check_cmake(os.path.join(root, "CMakeLists.txt"), allowed)
    for p in problems:
        print(p)
    # A file, or CMakeLists.txt or the table itself, passes when nothing is wrong with it.
    failing = {p.split(":", 1)[0] for p in problems}
    checked = files + 2
    print("layers: %d passed, %d failed (%d source files, CMakeLists.txt and the table of %d layers)"
          % (checked - len(failing), len(failing), files, len(allowed)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
