#!/usr/bin/env python3
"""Compare what `perf kvm tasks` listed with the guest's own /proc.

Usage: guest-tasks-compare.py STAT TASKS

STAT holds the guest's /proc/PID/stat lines, each after a "GUEST-STAT "
tag; TASKS is perf kvm tasks' output.  Every process the guest listed must
be in perf's list with its name, as its own thread group, with a page
table if it is a user process and none if it is a kernel thread; each
user process's page table its own; and perf must list nothing the guest
did not, but swapper/0 (pid 0, which /proc does not show) and kworkers,
which come and go while the guest idles.  Exit 1 on any difference,
printing the first ten.
"""
import sys

PF_KTHREAD = 0x00200000
# The user processes the guest's /init starts or is: sh (init), sleep,
# cat, sh and its sleep.
MIN_USER = 5


def guest_processes(path):
    """pid -> (comm, is a kernel thread), from /proc/PID/stat lines."""
    procs = {}
    for line in open(path, errors="replace"):
        stat = line.split(" ", 1)[1].strip()
        pid, rest = stat.split(" (", 1)
        comm, rest = rest.rsplit(") ", 1)
        flags = int(rest.split()[6])
        procs[int(pid)] = (comm, bool(flags & PF_KTHREAD))
    return procs


def perf_tasks(path):
    """pid -> (tgid, comm, page table), from perf kvm tasks' columns."""
    tasks = {}
    for line in list(open(path, errors="replace"))[1:]:
        pid, tgid, comm, pgd = line[:7], line[8:15], line[16:32], line[33:]
        tasks[int(pid)] = (int(tgid), comm.rstrip(), int(pgd, 16))
    return tasks


def same_name(guest, perf):
    # /proc adds a kworker's workqueue to its name ("kworker/0:1-events"),
    # and gives a kernel thread its whole name, which task_struct's comm
    # cuts at TASK_COMM_LEN - 1 = 15 characters.
    if guest.startswith("kworker/") or len(perf) == 15:
        return guest.startswith(perf)
    return perf == guest


def differences(guest, perf):
    bad = []
    for pid, (comm, kthread) in sorted(guest.items()):
        if pid not in perf:
            if not comm.startswith("kworker/"):
                bad.append(f"pid {pid} ({comm}) is not in perf's list")
            continue
        tgid, name, pgd = perf[pid]
        if not same_name(comm, name):
            bad.append(f"pid {pid}: perf says {name!r}, the guest {comm!r}")
        if tgid != pid:
            bad.append(f"pid {pid}: thread group {tgid}, not its own")
        if kthread != (pgd == 0):
            what = "kernel thread" if kthread else "user process"
            bad.append(f"pid {pid} ({comm}): page table {pgd:#x} for a {what}")
    for pid, (_, name, _) in sorted(perf.items()):
        if pid and pid not in guest and not name.startswith("kworker/"):
            bad.append(f"perf lists pid {pid} ({name}), the guest did not")
    users = [p for p, (_, kthread) in guest.items() if not kthread and p in perf]
    pgds = [perf[p][2] for p in users]
    if len(set(pgds)) != len(pgds):
        bad.append("two user processes with the same page table")
    if perf.get(0, (0, ""))[1] != "swapper/0":
        bad.append("perf's list does not have swapper/0, pid 0")
    if len(users) < MIN_USER:
        bad.append(f"{len(users)} user processes listed by both, not the {MIN_USER} the guest runs")
    return bad


def main():
    guest = guest_processes(sys.argv[1])
    perf = perf_tasks(sys.argv[2])
    bad = differences(guest, perf)
    users = sum(1 for _, kthread in guest.values() if not kthread)
    print(f"    the guest's /proc: {len(guest)} processes ({users} user processes); "
          f"perf kvm tasks: {len(perf)}; {len(bad)} differences")
    for b in bad[:10]:
        print(f"FAIL: {b}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
