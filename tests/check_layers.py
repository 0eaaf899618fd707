#!/usr/bin/env python3
"""Holds src/ to its layering (src/README.md): a file may include headers
of its own folder or of a lower layer, never of a higher one, and no two
modules (a.c/a.h and b.c/b.h) include each other, directly or around a
longer circle. Prints every violation; exit 1 if any, else 0.

Usage: check_layers.py SRC_DIR
"""
import os
import re
import sys

LAYERS = ["base", "admission", "config", "job", "redis", "http", "daemon", "cli"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def module_of(path):
    """'daemon/worker_t.h' -> 'daemon/worker': a *_t.h type header belongs
    to the module it is named after."""
    stem = os.path.splitext(path)[0]
    return stem[:-2] if stem.endswith("_t") else stem


def layer_of(path):
    top = path.split("/", 1)[0]
    return LAYERS.index(top) if top in LAYERS else len(LAYERS)  # main.c: the top


def scan(src):
    """{file relative to src: [included paths relative to src]}"""
    found = {}
    for root, _, files in os.walk(src):
        for name in files:
            if not name.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(root, name), src)
            with open(os.path.join(src, rel), encoding="utf-8") as f:
                found[rel] = [i for i in INCLUDE.findall(f.read()) if i != "version.h"]
    return found


def layer_violations(files, src):
    out = []
    for rel, includes in sorted(files.items()):
        for inc in includes:
            if not os.path.exists(os.path.join(src, inc)):
                out.append(f"{rel}: includes \"{inc}\", which is not a path under src/")
            elif layer_of(inc) > layer_of(rel):
                out.append(f"{rel}: includes \"{inc}\" from a higher layer "
                           f"({inc.split('/')[0]} is above {rel.split('/')[0]})")
    return out


def circles(files):
    """Every circle of modules that include each other, once each."""
    edges = {}
    for rel, includes in files.items():
        a = module_of(rel)
        for inc in includes:
            b = module_of(inc)
            if a != b:
                edges.setdefault(a, set()).add(b)
    found, seen = [], set()

    def walk(node, path):
        for nxt in sorted(edges.get(node, ())):
            if nxt in path:
                ring = path[path.index(nxt):]
                key = frozenset(ring)
                if key not in seen:
                    seen.add(key)
                    found.append(" -> ".join(ring + [nxt]))
            elif len(path) < 12:
                walk(nxt, path + [nxt])

    for start in sorted(edges):
        walk(start, [start])
    return found


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    src = sys.argv[1]
    files = scan(src)
    problems = layer_violations(files, src) + [f"include circle: {c}" for c in circles(files)]
    for p in problems:
        print(p)
    print(f"check_layers: {len(files)} files, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
