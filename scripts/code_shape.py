#!/usr/bin/env python3
"""The code's shape, as issue 31 records it: lines per crate (every .rs file, tests included),
the largest non-test source files, and the longest functions (a `fn` line to the line of its
closing brace at the same indentation; test modules and test files excluded).

usage: scripts/code_shape.py [REPO_ROOT] [--top N]
"""
import os
import re
import sys

root = "."
top = 15
args = sys.argv[1:]
while args:
    a = args.pop(0)
    if a == "--top":
        top = int(args.pop(0))
    else:
        root = a

crates = os.path.join(root, "crates")
per_crate = {}
files = []
funcs = []
fn_re = re.compile(r"^(\s*)(pub(\([a-z:]+\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+([A-Za-z_][A-Za-z0-9_]*)")

def is_test_path(p):
    parts = p.split(os.sep)
    return "tests" in parts or p.endswith("/tests.rs") or "/benches/" in p

for crate in sorted(os.listdir(crates)):
    total = 0
    for d, _, names in os.walk(os.path.join(crates, crate)):
        if "/target" in d:
            continue
        for n in names:
            if not n.endswith(".rs"):
                continue
            p = os.path.join(d, n)
            with open(p, encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
            if lines and lines[-1] == "":
                lines.pop()
            total += len(lines)
            rel = os.path.relpath(p, crates)
            if is_test_path(rel):
                continue
            # Lines before a `#[cfg(test)]` module at the top level count as source.
            cut = len(lines)
            for i, l in enumerate(lines):
                if l.startswith("#[cfg(test)]") and i + 1 < len(lines) and lines[i + 1].startswith("mod "):
                    cut = i
                    break
            files.append((cut, rel))
            i = 0
            while i < cut:
                m = fn_re.match(lines[i])
                if m:
                    indent = m.group(1)
                    # The signature ends at `{` (a body) or `;` (a declaration, as in an extern block).
                    k = i
                    while k < cut and not lines[k].rstrip().endswith(("{", ";", "}")):
                        k += 1
                    if k < cut and lines[k].rstrip().endswith("{"):
                        # rustfmt puts the body's closing brace at the fn's own indentation.
                        j = k + 1
                        while j < cut and lines[j].rstrip() != indent + "}":
                            j += 1
                        funcs.append((j - i + 1, f"{rel}::{m.group(8)}"))
                i += 1
    per_crate[crate] = total

print("lines per crate (all .rs, tests included):")
print(", ".join(f"{c} {n:,}" for c, n in per_crate.items()))
print(f"total {sum(per_crate.values()):,}")
print(f"\nlargest source files (tests excluded), top {top}:")
for n, p in sorted(files, reverse=True)[:top]:
    print(f"  {n:6,}  {p}")
print(f"\nlongest functions (tests excluded), top {top}:")
for n, p in sorted(funcs, reverse=True)[:top]:
    print(f"  {n:6,}  {p}")
print(f"\nfunctions over 100 lines: {sum(1 for n, _ in funcs if n > 100)} of {len(funcs)}")
