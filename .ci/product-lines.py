#!/usr/bin/env python3
"""Counts the product code of the workspace: non-blank, non-comment lines of
`.rs` files outside `tests/`, `benches/`, `fuzz/`, `examples/` and `target/`,
leaving out `#[cfg(test)]` modules (an inline `mod x { ... }` after the
attribute, and the file of a `mod x;` declared after it, or the file its
`#[path = "..."]` names).

Usage: python3 .ci/product-lines.py [ROOT]   (prints the total and a line
per crate folder). Comments are `//` lines (doc comments included) and
`/* ... */` blocks that start a line; a line of code with a trailing comment
counts as code.
"""
import os
import re
import sys

SKIP_DIRS = {"tests", "benches", "fuzz", "examples", "target", ".git"}
MOD_DECL = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+([A-Za-z_][A-Za-z0-9_]*)\s*;")
PATH_ATTR = re.compile(r'^\s*#\[path\s*=\s*"([^"]+)"\]')
MOD_OPEN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+[A-Za-z_][A-Za-z0-9_]*\s*\{")


def test_module_files(path, lines):
    """Files of modules declared `#[cfg(test)] mod x;` in `path`."""
    out = []
    base = os.path.dirname(path)
    stem = os.path.splitext(os.path.basename(path))[0]
    own = base if stem in ("lib", "main", "mod") else os.path.join(base, stem)
    for i, line in enumerate(lines):
        if line.strip() != "#[cfg(test)]" or i + 1 >= len(lines):
            continue
        at = i + 1
        explicit = PATH_ATTR.match(lines[at])
        if explicit and at + 1 < len(lines):
            at += 1
        m = MOD_DECL.match(lines[at])
        if not m:
            continue
        if explicit:
            out.append(os.path.normpath(os.path.join(base, explicit.group(1))))
            continue
        name = m.group(3)
        for candidate in (os.path.join(own, name + ".rs"), os.path.join(own, name, "mod.rs")):
            out.append(os.path.normpath(candidate))
    return out


def count(lines):
    n = 0
    in_block = False
    skip_depth = None
    depth = 0
    pending_test = False
    for line in lines:
        s = line.strip()
        if skip_depth is not None:
            depth += line.count("{") - line.count("}")
            if depth <= skip_depth:
                skip_depth = None
            continue
        if pending_test and MOD_OPEN.match(line):
            skip_depth = depth
            depth += line.count("{") - line.count("}")
            pending_test = False
            continue
        pending_test = s == "#[cfg(test)]"
        if in_block:
            if "*/" in s:
                in_block = False
            continue
        if not s or s.startswith("//"):
            continue
        if s.startswith("/*"):
            in_block = "*/" not in s
            continue
        if s == "#[cfg(test)]":
            continue
        depth += line.count("{") - line.count("}")
        n += 1
    return n


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "."
    files = []
    for folder, dirs, names in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        files.extend(os.path.join(folder, n) for n in sorted(names) if n.endswith(".rs"))
    texts = {}
    for f in files:
        with open(f, encoding="utf-8") as handle:
            texts[os.path.normpath(f)] = handle.read().split("\n")
    excluded = set()
    for f, lines in texts.items():
        excluded.update(test_module_files(f, lines))
    per_crate = {}
    for f, lines in texts.items():
        if f in excluded:
            continue
        rel = os.path.relpath(f, root)
        crate = rel.split(os.sep + "src" + os.sep)[0] if os.sep + "src" + os.sep in rel else rel
        per_crate[crate] = per_crate.get(crate, 0) + count(lines)
    for crate in sorted(per_crate):
        print(f"{per_crate[crate]:>8} {crate}")
    print(f"{sum(per_crate.values()):>8} total")


if __name__ == "__main__":
    main()
