"""The stock guest profiled from the host alone, against its own sideband
on the same recording (tests/demo/agentless-test.sh): OUTDIR/agentless/
truth-script.txt, perf kvm --guest script with the guest's sideband, its
/proc/kallsyms and its build-id cache, and perf-kvm-script.txt, with what
the host read in guest memory (perf kvm tasks -o, perf kvm kallsyms) and
the guest's image; both with -F comm,pid,tid,time,ip,sym,dso.  Per
sample, the two matched by place and time:

  - each demo program's user samples (the program by the sideband): on the
    same process (AGENTLESS_MIN_PROCESS_PERCENT), of at least
    AGENTLESS_MIN_USER_SAMPLES each;
  - their user frames: the same symbol and file at the same place in the
    chain (AGENTLESS_MIN_USER_FRAME_PERCENT);
  - every sample's guest kernel frames: the same symbol
    (AGENTLESS_MIN_KERNEL_FRAME_PERCENT);
  - all samples: at most AGENTLESS_MAX_OTHER_PROCESS_PERCENT on another
    process than the sideband's (the unknown guest thread is none);
  - each demo program's process: the same parent, by the FORK records of
    the two sidebands (truth-tasks.txt and tasks.txt, perf script
    --show-task-events of each).
"""
import re
from demochecks.read import HOT_LEAVES, UNKNOWN_THREAD, parse_script
from demochecks.figures import at_least, at_most, is_kernel, num, pct, require_files

TRUTH = "agentless/truth-script.txt"
HOST = "agentless/perf-kvm-script.txt"
TRUTH_TASKS = "agentless/truth-tasks.txt"
HOST_TASKS = "agentless/tasks.txt"
SAMPLE_TIME = re.compile(r" (\d+\.\d+):")
FORK = re.compile(r"PERF_RECORD_FORK\((\d+):(\d+)\):\((\d+):(\d+)\)")


def sample_time(sample):
    match = SAMPLE_TIME.search(sample.header)
    return match.group(1) if match else None


def same_frame(a, b, with_dso):
    return a.addr == b.addr and a.sym == b.sym and (not with_dso or a.dso == b.dso)


def frames_alike(truth, host, kernel):
    """How many of truth's user (kernel) frames host has, alike, at the
    same place; and the first that differs, as an example."""
    alike, total, example = 0, 0, None
    for i, frame in enumerate(truth.frames):
        if is_kernel(frame) != kernel:
            continue
        total += 1
        if i < len(host.frames) and same_frame(frame, host.frames[i], not kernel):
            alike += 1
        elif example is None:
            other = host.frames[i] if i < len(host.frames) else None
            example = "%s %s: frame %d %s %s (%s), by the host's reads %s" % (
                truth.comm, sample_time(truth), i, frame.addr, frame.sym, frame.dso,
                "%s (%s)" % (other.sym, other.dso) if other else "none")
    return alike, total, example


def parents(path):
    """pid -> its parent's pid, by the last FORK record of a process (not
    of a thread) in perf script --show-task-events' output."""
    found = {}
    for line in open(path, errors="replace"):
        match = FORK.search(line)
        if match and match.group(1) == match.group(2):
            found[int(match.group(1))] = int(match.group(3))
    return found


def check_parents(v, outdir, programs):
    """Each demo program's process has the parent the guest's sideband
    gives it in the host's sideband too."""
    truth, host = parents(outdir / TRUTH_TASKS), parents(outdir / HOST_TASKS)
    same, bad = 0, []
    for prog, pid in sorted(programs):
        if pid in truth and host.get(pid) == truth[pid]:
            same += 1
        else:
            bad.append("%s %d: parent %s by the sideband, %s by the host's reads"
                       % (prog, pid, truth.get(pid), host.get(pid)))
    message = "the demo programs' processes: %d of %d with the same parent (FORK records)" % (
        same, len(programs))
    v.check(bool(programs) and not bad, message, message)
    for example in bad[:3]:
        v.example(example)


def check_agentless(v, outdir, limits):
    if not require_files(v, outdir, (TRUTH, HOST, TRUTH_TASKS, HOST_TASKS)):
        return
    truth, host = parse_script(outdir / TRUTH), parse_script(outdir / HOST)
    if (not truth or len(truth) != len(host)
            or [sample_time(s) for s in truth] != [sample_time(s) for s in host]):
        v.bad("not the same samples: %d with the guest's sideband, %d with the host's reads"
              % (len(truth), len(host)))
        return
    pairs = list(zip(truth, host))
    placed = {prog: [0, 0] for prog in HOT_LEAVES}
    user, kernel = [0, 0, []], [0, 0, []]
    other, unknown, examples = 0, 0, []
    for t, h in pairs:
        if h.comm == UNKNOWN_THREAD:
            unknown += 1
        elif h.pid != t.pid:
            other += 1
            examples.append("%s: %s %s by the sideband, %s %s by the host's reads"
                            % (sample_time(t), t.comm, t.pid, h.comm, h.pid))
        alike, total, example = frames_alike(t, h, kernel=True)
        kernel[0] += alike
        kernel[1] += total
        kernel[2] += [example] if example else []
        if t.comm not in placed or not t.frames or is_kernel(t.frames[0]):
            continue
        placed[t.comm][0] += 1
        placed[t.comm][1] += h.pid == t.pid
        alike, total, example = frames_alike(t, h, kernel=False)
        user[0] += alike
        user[1] += total
        user[2] += [example] if example else []
    v.ok("%d guest samples, the same in both; %d on no guest process by the host's reads"
         % (len(pairs), unknown))
    least = limits["AGENTLESS_MIN_PROCESS_PERCENT"]
    for prog, (n, same) in placed.items():
        v.check(n >= limits["AGENTLESS_MIN_USER_SAMPLES"] and at_least(same, n, least),
                "%s: %d of its %d user samples on the same process (%s; at least %s%%)"
                % (prog, same, n, pct(same, n), num(least)),
                "%s: %d of its %d user samples on the same process (%s; at least %s%% of at least %d)"
                % (prog, same, n, pct(same, n), num(least), limits["AGENTLESS_MIN_USER_SAMPLES"]))
    for what, (alike, total, diffs), name in (
            ("the demo programs' user frames", user, "AGENTLESS_MIN_USER_FRAME_PERCENT"),
            ("the guest kernel frames", kernel, "AGENTLESS_MIN_KERNEL_FRAME_PERCENT")):
        message = "%s: %d of %d the same symbol (%s; at least %s%%)" % (
            what, alike, total, pct(alike, total), num(limits[name]))
        v.check(at_least(alike, total, limits[name]), message, message)
        for diff in diffs[:3]:
            v.example(diff)
    most = limits["AGENTLESS_MAX_OTHER_PROCESS_PERCENT"]
    message = "%d of the %d samples on another process than the sideband's (%s; at most %s%%)" % (
        other, len(pairs), pct(other, len(pairs)), num(most))
    v.check(other == 0 or at_most(other, len(pairs), most), message, message)
    for example in examples[:3]:
        v.example(example)
    check_parents(v, outdir, {(t.comm, t.pid) for t in truth
                              if t.comm in placed and t.pid is not None})
