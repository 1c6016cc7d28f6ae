#!/usr/bin/env python3
"""Compare what `perf kvm tasks --maps` listed with the guest's own /proc.

Usage: guest-tasks-compare.py PROC TASKS

PROC holds the guest's /proc/PID/stat lines, each after a "GUEST-STAT "
tag, and its /proc/PID/maps lines, each after "GUEST-MAP PID "; TASKS is
perf kvm tasks --maps' output.  Every process the guest listed must be in
perf's list with its name, as its own thread group, with its parent's
pid, with a page table if it is a user process and none if it is a
kernel thread; each user
process's page table its own; and perf must list nothing the guest did
not, but swapper/0 (pid 0, which /proc does not show) and kworkers, which
come and go while the guest idles.  Each user process's maps must be the
guest's: addresses, permissions, offset and file (or [vdso]).  Exit 1 on any
difference, printing the first ten.
"""
import sys

PF_KTHREAD = 0x00200000
# The user processes the guest's /init starts or is: sh (init), sleep,
# cat, sh and its sleep, busybox from another mount and from a file
# deleted since.
MIN_USER = 7


def guest_processes(path):
    """pid -> (comm, is a kernel thread, parent's pid), and pid -> maps,
    from /proc."""
    procs, maps = {}, {}
    for line in open(path, errors="replace"):
        tag, rest = line.rstrip("\n").split(" ", 1)
        if tag == "GUEST-MAP":
            pid, rest = rest.split(" ", 1)
            maps.setdefault(int(pid), []).append(proc_map(rest))
            continue
        pid, rest = rest.split(" (", 1)
        comm, rest = rest.rsplit(") ", 1)
        fields = rest.split()
        procs[int(pid)] = (comm, bool(int(fields[6]) & PF_KTHREAD), int(fields[1]))
    return procs, maps


def proc_map(line):
    """(range, perms, offset, file) of a /proc/PID/maps line: a file, or
    [vdso]; no [heap] and such."""
    fields = line.split(None, 5)
    path = fields[5] if len(fields) > 5 and (fields[5].startswith("/") or
                                              fields[5] == "[vdso]") else ""
    return (fields[0], fields[1], fields[2], path)


def perf_tasks(path):
    """pid -> (tgid, comm, page table, parent's pid), and pid -> maps, from
    perf kvm tasks."""
    tasks, maps, pid = {}, {}, None
    for line in list(open(path, errors="replace"))[1:]:
        if line.startswith("\t"):
            maps.setdefault(pid, []).append(perf_map(line.strip()))
            continue
        pid, tgid, ppid, comm, pgd = line[:7], line[8:15], line[16:23], line[24:40], line[41:]
        pid = int(pid)
        tasks[pid] = (int(tgid), comm.rstrip(), int(pgd, 16), int(ppid))
    return tasks, maps


def perf_map(line):
    """(range, perms, offset, file) of a map perf kvm tasks --maps printed."""
    fields = line.split(None, 3)
    return (fields[0], fields[1], fields[2], fields[3] if len(fields) > 3 else "")


def same_name(guest, perf):
    # /proc adds a kworker's workqueue to its name ("kworker/0:1-events"),
    # and gives a kernel thread its whole name, which task_struct's comm
    # cuts at TASK_COMM_LEN - 1 = 15 characters.
    if guest.startswith("kworker/") or len(perf) == 15:
        return guest.startswith(perf)
    return perf == guest


def map_differences(guest_maps, perf_maps, users):
    bad = []
    for pid in users:
        want, got = guest_maps.get(pid, []), perf_maps.get(pid, [])
        if not want:
            bad.append(f"pid {pid}: the guest printed no maps")
        elif want != got:
            extra = [m for m in got if m not in want][:1]
            missing = [m for m in want if m not in got][:1]
            bad.append(f"pid {pid}: {len(got)} maps, the guest's {len(want)}; "
                       f"perf's own {extra}, the guest's own {missing}")
    return bad


def differences(guest, perf):
    bad = []
    for pid, (comm, kthread, ppid) in sorted(guest.items()):
        if pid not in perf:
            if not comm.startswith("kworker/"):
                bad.append(f"pid {pid} ({comm}) is not in perf's list")
            continue
        tgid, name, pgd, parent = perf[pid]
        if not same_name(comm, name):
            bad.append(f"pid {pid}: perf says {name!r}, the guest {comm!r}")
        if tgid != pid:
            bad.append(f"pid {pid}: thread group {tgid}, not its own")
        if parent != ppid:
            bad.append(f"pid {pid} ({comm}): parent {parent}, the guest's {ppid}")
        if kthread != (pgd == 0):
            what = "kernel thread" if kthread else "user process"
            bad.append(f"pid {pid} ({comm}): page table {pgd:#x} for a {what}")
    for pid, (_, name, _, _) in sorted(perf.items()):
        if pid and pid not in guest and not name.startswith("kworker/"):
            bad.append(f"perf lists pid {pid} ({name}), the guest did not")
    users = [p for p, (_, kthread, _) in guest.items() if not kthread and p in perf]
    pgds = [perf[p][2] for p in users]
    if len(set(pgds)) != len(pgds):
        bad.append("two user processes with the same page table")
    if perf.get(0, (0, ""))[1] != "swapper/0":
        bad.append("perf's list does not have swapper/0, pid 0")
    if len(users) < MIN_USER:
        bad.append(f"{len(users)} user processes listed by both, not the {MIN_USER} the guest runs")
    return bad


def main():
    guest, guest_maps = guest_processes(sys.argv[1])
    perf, perf_maps = perf_tasks(sys.argv[2])
    users = [p for p, (_, kthread, _) in guest.items() if not kthread and p in perf]
    bad = differences(guest, perf) + map_differences(guest_maps, perf_maps, users)
    print(f"    the guest's /proc: {len(guest)} processes ({len(users)} user processes, "
          f"{sum(len(m) for m in guest_maps.values())} maps); perf kvm tasks: {len(perf)} "
          f"({sum(len(m) for m in perf_maps.values())} maps); {len(bad)} differences")
    for b in bad[:10]:
        print(f"FAIL: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
