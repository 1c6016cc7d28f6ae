#!/usr/bin/env python3
"""Compare the guest sideband `perf kvm tasks -o` wrote with the guest's /proc.

Usage: guest-sideband-compare.py PROC TASKS DUMP HEADER VDSO [pti]

PROC holds the guest's /proc/PID/stat and maps lines (as for
guest-tasks-compare.py), TASKS perf kvm tasks' list (its page tables),
DUMP `perf report -D` of the sideband and HEADER `perf report
--header-only -I` of it, VDSO the build-id of the guest's vDSO image
(perf buildid-list of the one perf put in the build-id cache).  The
guest ran the same processes all the time
perf read it.  Each of its user processes must have one FORK record, from
its parent (its /proc/PID/stat's), and after it one COMM record, with its
pid and name, and an MMAP2 record for each of its executable
mappings (address, size, offset, file; [vdso] with the build-id of the
guest's vDSO image, //anon for one without a file), and nothing else;
the header must give each of them one
address space: its page table as perf kvm tasks lists it, seen its own
from the first read to the last, the same two times for all of them
(with "pti", a guest that isolates its page tables: two, that page
table and the one after it, where its user space runs).
Kernel threads have neither.  Exit 1 on any difference, printing the
first ten.
"""
import re
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from importlib import import_module  # noqa: E402

compare = import_module("guest-tasks-compare")

COMM = re.compile(r"PERF_RECORD_COMM( exec)?: (.*):(\d+)/(\d+)$")
FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)$")
MMAP2 = re.compile(r"PERF_RECORD_MMAP2 (\d+)/(\d+): \[(0x[0-9a-f]+)\((0x[0-9a-f]+)\) @ "
                   r"(0x[0-9a-f]+|0) [^\]]*\]: (\S+) (.*)$")
BUILD_ID = re.compile(r" <([0-9a-f]+)>\]: ")
AS = re.compile(r"#   VM (\d+) pid (\d+) page table (0x[0-9a-f]+) from (\d+) to (\d+)$")


def sideband(path):
    """pid -> [comm names], pid -> set of maps, pid -> [parents' pids
    of FORK records before its first COMM], from perf report -D."""
    comms, maps, forks = {}, {}, {}
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        m = FORK.search(line)
        if m:
            if int(m.group(1)) not in comms:
                forks.setdefault(int(m.group(1)), []).append(int(m.group(3)))
            continue
        m = COMM.search(line)
        if m:
            comms.setdefault(int(m.group(3)), []).append(m.group(2))
            continue
        m = MMAP2.search(line)
        if m:
            start, size = int(m.group(3), 16), int(m.group(4), 16)
            name = m.group(7)
            if name == "[vdso]":
                bid = BUILD_ID.search(line)
                name += " <%s>" % (bid.group(1) if bid else "no build-id")
            maps.setdefault(int(m.group(1)), []).append(
                (start, start + size, int(m.group(5), 16), m.group(6), name))
    return comms, maps, forks


def guest_exec_maps(guest_maps, pid, vdso):
    """The executable maps of pid, as the sideband's MMAP2 records give them
    ([vdso] with build-id vdso)."""
    want = []
    for rng, perms, offset, path in guest_maps.get(pid, []):
        if "x" not in perms:
            continue
        start, end = (int(x, 16) for x in rng.split("-"))
        if path == "[vdso]":
            path = "[vdso] <%s>" % vdso
        want.append((start, end, int(offset, 16) if path.startswith("/") else 0, perms,
                     path or "//anon"))
    return want


def address_spaces(path):
    return [tuple(int(x, 0) for x in m.groups())
            for m in (AS.search(line.rstrip("\n")) for line in open(path)) if m]


def differences(guest, guest_maps, perf, records, spaces, pti, vdso):
    comms, maps, forks = records
    bad = []
    users = [p for p, (_, kthread, _) in guest.items() if not kthread]
    for pid in users:
        comm, _, ppid = guest[pid]
        if forks.get(pid) != [ppid]:
            bad.append(f"pid {pid} ({comm}): FORK records before its COMM from {forks.get(pid)}, "
                       f"its parent {ppid}")
        if comms.get(pid) != [comm]:
            bad.append(f"pid {pid} ({comm}): COMM records {comms.get(pid)}")
        want, got = guest_exec_maps(guest_maps, pid, vdso), maps.get(pid, [])
        if sorted(want) != sorted(got):
            bad.append(f"pid {pid}: MMAP2 {sorted(got)[:2]}..., the guest's {sorted(want)[:2]}...")
    for pid in sorted(set(comms) | set(maps) | set(forks)):
        if pid not in users:
            bad.append(f"records of pid {pid}, which is no user process of the guest")
    by_pid = {}
    for _, pid, pgd, start, end in spaces:
        by_pid.setdefault(pid, []).append((pgd, start, end))
    for pid in users:
        got = sorted(by_pid.get(pid, []))
        want = [perf[pid][2], perf[pid][2] + 0x1000] if pti and pid in perf else \
            [perf[pid][2]] if pid in perf else []
        if [pgd for pgd, _, _ in got] != want:
            bad.append(f"pid {pid}: address spaces {got}, page table "
                       f"{perf[pid][2] if pid in perf else None:#x}")
    for pid in sorted(set(by_pid) - set(users)):
        bad.append(f"an address space of pid {pid}, which is no user process of the guest")
    times = {(start, end) for _, _, _, start, end in spaces}
    if len(times) != 1 or any(start >= end for start, end in times):
        bad.append(f"the processes' times are not one span from the first read to the last: {sorted(times)[:3]}")
    return bad


def main():
    guest, guest_maps = compare.guest_processes(sys.argv[1])
    perf, _ = compare.perf_tasks(sys.argv[2])
    comms, maps, forks = records = sideband(sys.argv[3])
    spaces = address_spaces(sys.argv[4])
    pti = sys.argv[6:] == ["pti"]
    bad = differences(guest, guest_maps, perf, records, spaces, pti, sys.argv[5])
    users = [p for p, (_, kthread, _) in guest.items() if not kthread]
    print(f"    the guest's /proc: {len(users)} user processes; the sideband: "
          f"{sum(len(f) for f in forks.values())} FORK, "
          f"{sum(len(c) for c in comms.values())} COMM, {sum(len(m) for m in maps.values())} "
          f"MMAP2, {len(spaces)} address spaces; {len(bad)} differences")
    for b in bad[:10]:
        print(f"FAIL: {b}")
    return 1 if bad or len(users) < compare.MIN_USER else 0


if __name__ == "__main__":
    sys.exit(main())
