#!/usr/bin/env python3
"""Say which postable series each commit of the work tree belongs to.

    series-of-commits.py PATCHES          (in the work tree)
        prints "NAME COMMIT" for every commit of base..series, in order
    series-of-commits.py --runs PATCHES   < that output
        prints "NAME FIRST LAST [NEEDS...]" per series, in order

PATCHES/series lists the series, "NAME [NEEDS...]", in the order the tree
holds them.  A commit belongs to the series whose patch has its subject; a
commit no patch has (new, or reworded) belongs to the series of the commit
before it.  Each series must be one run of commits, in the listed order.
"""
import os
import subprocess
import sys


def read_series(patches):
    series = []
    with open(os.path.join(patches, "series")) as f:
        for line in f:
            line = line.split("#", 1)[0].split()
            if line:
                series.append((line[0], line[1:]))
    return series


def patch_subject(path):
    """The Subject: of a format-patch file, unfolded, without its [PATCH]."""
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = f.read().split("\n\n", 1)[0].split("\n")
    for i, line in enumerate(lines):
        if line.startswith("Subject: "):
            subject = line[len("Subject: "):]
            for cont in lines[i + 1:]:
                if not cont.startswith((" ", "\t")):
                    break
                subject += cont
            if subject.startswith("["):
                subject = subject.split("] ", 1)[-1]
            return subject
    return None


def subjects(patches, series):
    owner = {}
    for name, _ in series:
        directory = os.path.join(patches, name)
        if not os.path.isdir(directory):
            continue
        for patch in sorted(os.listdir(directory)):
            if patch.endswith(".patch") and not patch.startswith("0000-"):
                subject = patch_subject(os.path.join(directory, patch))
                if subject:
                    owner.setdefault(subject, name)
    return owner


def assign(patches):
    series = read_series(patches)
    order = [name for name, _ in series]
    owner = subjects(patches, series)
    log = subprocess.run(["git", "log", "--reverse", "--format=%H %s", "base..series"],
                         check=True, capture_output=True, text=True).stdout
    result = []
    current = order[0]
    for line in log.splitlines():
        commit, subject = line.split(" ", 1)
        current = owner.get(subject, current)
        result.append((current, commit, subject))

    ok = True
    position = 0
    for name, commit, subject in result:
        index = order.index(name)
        if index < position:
            print(f"commit {commit[:12]} ({subject}) of series {name} comes after "
                  f"commits of series {order[position]}: move it with 'git rebase -i'",
                  file=sys.stderr)
            ok = False
        position = max(position, index)
    present = {name for name, _, _ in result}
    for name in order:
        if name not in present:
            print(f"series {name} of {patches}/series has no commit", file=sys.stderr)
            ok = False
    if not ok:
        return 1
    for name, commit, _ in result:
        print(name, commit)
    return 0


def runs(patches):
    needs = dict(read_series(patches))
    first, last, order = {}, {}, []
    for line in sys.stdin:
        name, commit = line.split()
        if name not in first:
            first[name] = commit
            order.append(name)
        last[name] = commit
    for name in order:
        print(name, first[name], last[name], *needs[name])
    return 0


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--runs":
        sys.exit(runs(sys.argv[2]))
    if len(sys.argv) == 2:
        sys.exit(assign(sys.argv[1]))
    sys.exit(__doc__)
