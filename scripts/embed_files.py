#!/usr/bin/env python3
"""Writes a C++ source that holds every file under a directory (the built web UI), for
server/ui_bundle.h. Usage: embed_files.py DIR OUT.cc. A missing DIR gives an empty bundle."""
import os
import sys


def literal(data):
    # Octal escapes for everything but plain printable ASCII; split to keep lines short.
    out, line = [], []
    width = 0
    for b in data:
        if 32 <= b < 127 and b not in (34, 92, 63):  # not " \ ? (trigraphs)
            piece = chr(b)
        else:
            piece = "\\%03o" % b
        line.append(piece)
        width += len(piece)
        if width >= 100:
            out.append('"%s"' % "".join(line))
            line, width = [], 0
    if line or not out:
        out.append('"%s"' % "".join(line))
    return "\n    ".join(out)


def main():
    root, out_path = sys.argv[1], sys.argv[2]
    files = []
    if os.path.isfile(os.path.join(root, "index.html")):
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames.sort()
            for name in sorted(filenames):
                full = os.path.join(dirpath, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                with open(full, "rb") as f:
                    files.append((rel, f.read()))
    lines = ['#include "server/ui_bundle.h"', "", "namespace cairn::server {", "namespace {", ""]
    for i, (rel, data) in enumerate(files):
        lines.append("constexpr char kFile%d[] =\n    %s;" % (i, literal(data)))
    lines.append("")
    lines.append("constexpr BundledFile kFiles[] = {")
    for i, (rel, data) in enumerate(files):
        lines.append('    {"%s", std::string_view(kFile%d, %d)},' % (rel, i, len(data)))
    if not files:
        lines.append('    {"", std::string_view()},')
    lines.append("};")
    lines.append("")
    lines.append("}  // namespace")
    lines.append("")
    lines.append("std::span<const BundledFile> BundledUiFiles() {")
    lines.append("  return std::span<const BundledFile>(kFiles, %d);" % len(files))
    lines.append("}")
    lines.append("")
    lines.append("}  // namespace cairn::server")
    text = "\n".join(lines) + "\n"
    try:
        with open(out_path) as f:
            if f.read() == text:
                return  # unchanged: the build sees the old timestamp and recompiles nothing
    except OSError:
        pass
    tmp = out_path + ".tmp"
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, out_path)


if __name__ == "__main__":
    main()
