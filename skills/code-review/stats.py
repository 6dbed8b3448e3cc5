#!/usr/bin/env python3
"""List what a change touches, largest first, to plan a review.

Usage: python3 skills/code-review/stats.py [GIT-DIFF-ARGS...]
       git diff --numstat main... | python3 skills/code-review/stats.py -

With arguments (default: HEAD, the uncommitted changes) it runs
`git diff --numstat -M <args>` in the current directory; with "-" it reads
numstat lines from stdin. Prints a Markdown table of files with lines added
and removed, their kind (code, test, docs, config, generated, binary), and
totals. Exit status: 0 done (also for an empty change); 1 git failed or the
input is not numstat output. Standard library only.
"""

import os
import re
import subprocess
import sys

NUMSTAT = re.compile(r"^(\d+|-)\t(\d+|-)\t(.+)$")
DOCS = {".md", ".rst", ".txt", ".adoc"}
CONFIG = {".json", ".yaml", ".yml", ".toml", ".ini", ".cfg", ".conf", ".env", ".lock", ".mod", ".sum"}
GENERATED = ("gen/", "vendor/", "node_modules/", "dist/", ".pb.go", "_pb2.py", ".min.js", "package-lock.json")


def fail(message):
    print(f"stats.py: {message}", file=sys.stderr)
    sys.exit(1)


def kind(path, binary):
    if binary:
        return "binary"
    low = path.lower()
    base = os.path.basename(low)
    if any(g in low for g in GENERATED):
        return "generated"
    if "test" in base or "/tests/" in "/" + low or "/testdata/" in "/" + low or "spec." in base:
        return "test"
    ext = os.path.splitext(base)[1]
    if ext in DOCS:
        return "docs"
    if ext in CONFIG or base in ("dockerfile", "makefile"):
        return "config"
    return "code"


def renamed(path):
    # git prints renames as "old => new" or "dir/{old => new}/file".
    m = re.match(r"^(.*)\{(.*) => (.*)\}(.*)$", path)
    if m:
        return (m.group(1) + m.group(3) + m.group(4)).replace("//", "/")
    if " => " in path:
        return path.split(" => ", 1)[1]
    return path


def numstat_lines(args):
    if args == ["-"]:
        return sys.stdin.read().splitlines()
    cmd = ["git", "diff", "--numstat", "-M"] + (args or ["HEAD"])
    try:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    except FileNotFoundError:
        fail("git is not installed")
    if res.returncode != 0:
        fail(f"{' '.join(cmd)}: {res.stderr.strip().splitlines()[0] if res.stderr.strip() else 'exit ' + str(res.returncode)}")
    return res.stdout.splitlines()


def main():
    args = sys.argv[1:]
    if args in (["-h"], ["--help"]):
        print(__doc__.strip())
        return 0
    rows = []
    for line in numstat_lines(args):
        if not line.strip():
            continue
        m = NUMSTAT.match(line)
        if not m:
            fail(f"not a `git diff --numstat` line: {line[:80]!r}")
        binary = m.group(1) == "-"
        added = 0 if binary else int(m.group(1))
        removed = 0 if binary else int(m.group(2))
        path = renamed(m.group(3))
        rows.append((added + removed, added, removed, path, kind(path, binary)))
    if not rows:
        print("No changes.")
        return 0
    rows.sort(key=lambda r: (-r[0], r[3]))
    print("| file | + | - | kind |")
    print("|---|---|---|---|")
    for _, added, removed, path, k in rows:
        print(f"| {path} | {added} | {removed} | {k} |")
    totals = {}
    for _, added, removed, _, k in rows:
        a, r, n = totals.get(k, (0, 0, 0))
        totals[k] = (a + added, r + removed, n + 1)
    print()
    print(f"{len(rows)} files, +{sum(r[1] for r in rows)} -{sum(r[2] for r in rows)}; by kind: "
          + ", ".join(f"{k} {n} files +{a} -{r}" for k, (a, r, n) in sorted(totals.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
