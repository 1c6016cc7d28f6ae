#!/usr/bin/env python3
"""The demo's checks, and the one parser of what they read.

What 'make demo' writes to its output directory (demo/in-l1.sh,
demo/report.sh) is read here and nowhere else in the checks:
  recording.txt        "KEY VALUE" lines: what perf recorded and lost
  perf-kvm-script.txt  perf kvm --guest script: a header line per sample,
                       then a TAB-indented line per frame, innermost first
  folded.txt           folded stacks, "comm;outermost;...;innermost COUNT"
  flamegraph.html      the flame graph's JSON in perf's page
  flamegraph.labels    the names Chromium showed, one a line
  top-stacks.txt       the ten hottest stacks, "COUNT SHARE  VM: comm: stack"
  machines             what perf kvm recorded: "--host --guest" or "--guest"
  perf-kvm-vcpu-script.txt  perf kvm --host --guest script, as above
  folded-vcpu.txt      its folded stacks, "VM;thread;outermost;... COUNT"
  flamegraph-vcpu.html, flamegraph-vcpu.labels  its flame graph
  vms                  a line per VM: NAME GUEST LEVEL QEMU-PID [VCPUS]
and every bound the checks use is in demo/thresholds.conf.

  demo/checks.py recording OUTDIR   the recording (demo/recording-check.sh)
  demo/checks.py output OUTDIR      one VM's demo (demo/check-output.sh)
  demo/checks.py vms OUTDIR         several VMs' (demo/check-vms.sh)
  demo/checks.py counts FILE [KEY]  what a perf kvm script output holds
  demo/checks.py threshold NAME     a bound, as the checks read it

A check prints "ok: ..." or "FAILED: ..." (and, indented, examples of what
failed); the exit status is 1 if any check failed.
"""
import argparse
import json
import math
import os
import re
import sys
from collections import Counter, namedtuple
from pathlib import Path

THRESHOLDS = Path(__file__).resolve().parent / "thresholds.conf"
# in-l1.sh lets DEMO_MAX_LOST_PERCENT set the bound it records again
# above; the checks must judge by the same one.
ENV_OVERRIDES = {"MAX_LOST_PERCENT": "DEMO_MAX_LOST_PERCENT"}
THRESHOLD_NAMES = frozenset({
    "MAX_LOST_PERCENT", "MIN_GUEST_SHARE_PERCENT", "MIN_VMS_GUEST_SHARE_PERCENT",
    "MAX_UNKNOWN_THREAD_PERCENT", "MIN_ASKED_SAMPLES_PERCENT",
    "MIN_CHAINED_PERCENT", "MIN_COMPLETE_KERNEL_PERCENT", "MIN_LEAF_MAIN_PERCENT",
    "MIN_LEAF_SHARE_PERCENT", "MIN_RESOLVED_IP_PERCENT", "MIN_VM_SHARE_PERCENT",
    "LABEL_MIN_PERMILLE", "MIN_PNG_BYTES", "MIN_VCPU_HOST_PERCENT",
})

# perf kvm's thread for a guest sample its VM's sideband could not place.
UNKNOWN_THREAD = "[unknown guest thread]"
# A guest kernel chain is complete when its outermost kernel frame is an
# entry point: a system call, an exception, an interrupt, a kernel
# thread's start, or, on the interrupt stack, whose copy is all a sample
# has, the interrupt handler that switched to it.
KERNEL_ENTRY = re.compile(
    r"(entry_SYSCALL_64|entry_SYSCALL_64_after_hwframe|asm_(exc|sysvec|common)_[a-z_]+"
    r"|ret_from_fork(_asm)?|sysvec_[a-z_]+)")
# The stock guest's programs (demo/workload.c, demo/pingpong.c) and the
# functions their hot loops spend their time in; the fp guest runs workload.
HOT_LEAVES = {
    "workload": ("checksum_block", "mix_word"),
    "ping": ("ping_stroke", "ping_volley"),
    "pong": ("pong_stroke", "pong_volley"),
}
PROGRAM_OF_LEAF = {leaf: prog for prog, leaves in HOT_LEAVES.items() for leaf in leaves}
# Callers before callees, as folded stacks go; compilers inline differently.
KERNEL_PATHS = (
    r"entry_SYSCALL_64_after_hwframe;do_syscall_64;([^;]*;)*ksys_(write|read);vfs_(write|read);pipe_(write|read)",
    r"asm_exc_page_fault;exc_page_fault;([^;]*;)*handle_mm_fault",
    r";main;run_workload;compute_phase;checksum_block",
)
STOCK_PATH = r"^ping;([^;]*;)*main;ping_rally;ping_volley"
FP_PATH = r";main"
# The names the rendered flame graph must show when wide enough, and those
# it must show always.
LABELLED = ("entry_SYSCALL_64_after_hwframe", "do_syscall_64", "asm_exc_page_fault",
            "exc_page_fault", "main", "run_workload", "compute_phase")
ALWAYS_LABELLED = ("main", "do_syscall_64")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
TOP_STACKS = 10  # demo/report.sh writes the ten hottest
EXAMPLES = 3     # examples of a failure shown, per kind

Frame = namedtuple("Frame", "addr sym dso")
# vm, vcpu: from "VM: PID" and "VCPU: N" (-F +machine_pid,+vcpu), None
# when absent; pid None when perf printed the TID alone; comm, tid None
# when the header could not be read.
Sample = namedtuple("Sample", "vm vcpu comm pid tid frames header")
Vm = namedtuple("Vm", "name kind level pid vcpus")


def beyond_ip(sample):
    """Whether the sample has a frame beyond its IP: one at another
    address (perf shows the functions inlined at an address as frames at
    that same address)."""
    return any(f.addr != sample.frames[0].addr for f in sample.frames[1:])


class Error(Exception):
    """Input the checks cannot read at all (not a failed check)."""


# -- reading ----------------------------------------------------------------

def load_thresholds(path=THRESHOLDS, environ=os.environ):
    """NAME -> number from thresholds.conf, with ENV_OVERRIDES applied."""
    values = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        name, eq, value = line.partition("=")
        if not eq or name not in THRESHOLD_NAMES:
            raise Error("%s:%d: not a known NAME=VALUE: %s" % (path, number, line))
        values[name] = parse_number(value, "%s:%d: %s" % (path, number, name))
    missing = THRESHOLD_NAMES - values.keys()
    if missing:
        raise Error("%s: no %s" % (path, ", ".join(sorted(missing))))
    for name, var in ENV_OVERRIDES.items():
        if environ.get(var):
            values[name] = parse_number(environ[var], var)
    return values


def parse_number(text, what):
    """A bound: a whole or decimal number, nothing else (no "inf", "1e3")."""
    if not re.fullmatch(r"\d+(\.\d+)?", text):
        raise Error("%s must be a number, not '%s'" % (what, text))
    value = float(text)
    return int(value) if value.is_integer() else value


HEADER_VM = re.compile(r"VM: *(\d+) ")
HEADER_VCPU = re.compile(r"VCPU: *(\d+) ")
# comm (which may hold spaces), PID/TID or TID, [CPU] with -a, the time.
HEADER_REST = re.compile(r" *(.*?) +(-?\d+)(?:/(-?\d+))? +(?:\[\d+\] +)?\d+\.\d+:")
FRAME_LINE = re.compile(r"\s*(\S+)(?:\s+(.*?))??(?:\s+\((.*)\))?\s*$")
SYMBOL_OFFSET = re.compile(r"\+0x[0-9a-f]+$")


def parse_header(line):
    """A sample header's (vm, vcpu, comm, pid, tid)."""
    rest, vm, vcpu = line, None, None
    match = HEADER_VM.match(rest)
    if match:
        vm, rest = int(match.group(1)), rest[match.end():]
    match = HEADER_VCPU.match(rest)
    if match:
        vcpu, rest = int(match.group(1)), rest[match.end():]
    match = HEADER_REST.match(rest)
    if not match:
        return vm, vcpu, None, None, None
    comm, first, second = match.groups()
    if second is None:
        return vm, vcpu, comm, None, int(first)
    return vm, vcpu, comm, int(first), int(second)


def parse_frame(line):
    """A frame line, "ADDR SYM+0xOFF (DSO)": its address, symbol without
    the offset, and DSO (empty if perf gave none)."""
    match = FRAME_LINE.match(line)
    if not match:  # a blank frame line: no frame perf could name
        return Frame("", "", "")
    addr, sym, dso = match.groups()
    return Frame(addr, SYMBOL_OFFSET.sub("", sym or ""), dso or "")


def parse_script(path):
    """perf kvm script's samples, in order."""
    samples = []
    header, frames = None, []
    for line in Path(path).read_text(errors="replace").splitlines():
        if line.startswith("\t"):
            if header is not None:
                frames.append(parse_frame(line))
        elif line.strip():
            if header is not None:
                samples.append(Sample(*parse_header(header), tuple(frames), header))
            header, frames = line, []
    if header is not None:
        samples.append(Sample(*parse_header(header), tuple(frames), header))
    return samples


def parse_recording(path):
    """recording.txt (demo/in-l1.sh): KEY -> VALUE, both text."""
    values = {}
    for line in Path(path).read_text().splitlines():
        fields = line.split()
        if len(fields) >= 2:
            values.setdefault(fields[0], fields[1])
    return values


def parse_flamegraph(path):
    """The flame graph's tree, as perf's flamegraph.py put it in the page:
    nodes {"n": name, "l": libtype, "v": value, "c": [children]}."""
    html = Path(path).read_text(errors="replace")
    start = html.find('{"n": "all"')
    if start < 0:
        raise Error("no flame graph data in %s" % path)
    root, _ = json.JSONDecoder().raw_decode(html[start:])
    return root


def parse_folded(path):
    """Folded stacks: (frames, count), frames outermost first (the comm,
    or with --include-vm the VM, first)."""
    stacks = []
    for line in Path(path).read_text(errors="replace").splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            stacks.append((stack, int(count)))
    return stacks


def parse_vms(path):
    """OUTDIR/vms (demo/in-l1.sh): a line per VM, NAME GUEST LEVEL QEMU-PID
    and, since VMs have several vCPUs, VCPUS (1 when absent)."""
    vms = []
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        fields = line.split()
        if not fields:
            continue
        try:
            vcpus = int(fields[4]) if len(fields) > 4 else 1
            vms.append(Vm(fields[0], fields[1], int(fields[2]), fields[3], vcpus))
        except (IndexError, ValueError):
            raise Error("%s:%d: not NAME GUEST LEVEL QEMU-PID [VCPUS]: %s" % (path, number, line)) from None
    return vms


def read_text(path):
    """A one-line file's text (as $(cat FILE) gives it), empty if none."""
    try:
        return Path(path).read_text().strip()
    except OSError:
        return ""


def first_level(root):
    """The names on the flame graph's first level, below "all"."""
    return [child["n"] for child in root.get("c", [])]


# -- figures ----------------------------------------------------------------

def at_least(part, whole, percent):
    """part is at least percent of whole; never true of nothing."""
    return whole > 0 and part * 100 >= whole * percent


def at_most(part, whole, percent):
    """part is at most percent of whole; never true of nothing."""
    return whole > 0 and part * 100 <= whole * percent


def pct(part, whole):
    return "%.1f%%" % (100 * part / whole) if whole else "n/a"


def num(value):
    """A threshold as thresholds.conf writes it: 1, not 1.0."""
    return "%g" % value


def is_kernel(frame):
    return frame.addr.startswith("ffff")


def has_main(sample):
    return any(frame.sym == "main" for frame in sample.frames[1:])


def symbols(sample):
    return "".join(" " + frame.sym for frame in sample.frames)


def kernel_chain_complete(sample):
    """Every kernel frame resolved, the outermost one an entry point."""
    kernel = [frame for frame in sample.frames if is_kernel(frame)]
    return (all(frame.sym != "[unknown]" for frame in kernel)
            and KERNEL_ENTRY.fullmatch(kernel[-1].sym) is not None)


def counts(samples):
    """What a perf kvm script output holds, by name (demo/soak.sh and
    demo/bad-use-test.sh read these too)."""
    return {
        "samples": len(samples),
        "chained": sum(beyond_ip(s) for s in samples),
        "kernel": sum(bool(s.frames) and is_kernel(s.frames[0]) for s in samples),
        # guest kernel frames beyond the first: an unwound kernel stack
        "deep_kernel": sum(sum(map(is_kernel, s.frames)) >= 2 for s in samples),
        "unknown_thread": sum(s.comm == UNKNOWN_THREAD for s in samples),
        # user space samples the sideband gave to a guest thread
        "placed_user": sum(bool(s.frames) and not is_kernel(s.frames[0])
                           and s.comm != UNKNOWN_THREAD for s in samples),
    }


def label_permille(stacks, name):
    """Thousandths of the samples whose stack has a frame named name."""
    total = sum(count for _, count in stacks)
    held = sum(count for stack, count in stacks if name in stack.split(";"))
    return 1000 * held // total if total else 0


# -- verdicts ---------------------------------------------------------------

class Verdicts:
    """Prints each check's verdict as it comes; remembers a failure."""

    def __init__(self, out=sys.stdout):
        self.out = out
        self.failed = False

    def ok(self, message):
        print("ok: " + message, file=self.out)

    def bad(self, message):
        print("FAILED: " + message, file=self.out)
        self.failed = True

    def check(self, good, ok_message, bad_message):
        if good:
            self.ok(ok_message)
        else:
            self.bad(bad_message)

    def example(self, message):
        print("  " + message, file=self.out)


def require_files(v, outdir, names):
    """The files a check reads, each there and not empty."""
    present = True
    for name in names:
        if not (outdir / name).is_file() or (outdir / name).stat().st_size == 0:
            v.bad("no %s in %s" % (name, outdir))
            present = False
    return present


# -- the recording (demo/recording-check.sh) ------------------------------------

def check_recording(v, outdir, limits):
    """A good recording, before anything is judged or reused from it: little
    lost, nothing of a sideband lost, enough of its samples shown as guest
    samples, few of them on the unknown guest thread (one VM; demo/check-vms
    judges that per VM)."""
    path = outdir / "recording.txt"
    if not path.is_file() or path.stat().st_size == 0:
        v.bad("no recording.txt in %s: the recording did not finish" % outdir)
        return
    rec = parse_recording(path)
    try:
        samples, lost = int(rec["samples"]), int(rec["lost"])
        percent = float(rec["lost_percent"])
    except (KeyError, ValueError):
        v.bad("recording.txt in %s does not say how many samples were recorded and lost" % outdir)
        return
    check_lost(v, rec, samples, lost, percent, limits["MAX_LOST_PERCENT"])
    check_asked(v, rec, samples, limits["MIN_ASKED_SAMPLES_PERCENT"])
    stock = read_text(outdir / "demo-guest") == "stock"
    vms = parse_vms(outdir / "vms") if (outdir / "vms").is_file() else []
    if stock or any(vm.kind == "stock" for vm in vms):
        check_sideband(v, rec.get("sideband_lost", ""))
    script = outdir / "perf-kvm-script.txt"
    if not script.is_file() or script.stat().st_size == 0:
        v.bad("no perf-kvm-script.txt in %s" % outdir)
        return
    guest = counts(parse_script(script))
    vcpu_script = outdir / "perf-kvm-vcpu-script.txt"
    if recorded_host(outdir) and vcpu_script.is_file():
        # The recording's host samples (QEMU's own) are not guest samples.
        host = len(parse_script(vcpu_script)) - guest["samples"]
        v.ok("%d of the recording's samples are QEMU's host samples (perf kvm --host --guest)"
             % host)
        samples -= max(host, 0)
    # Several VMs are recorded by cgroup (-a -G): their vCPU threads' host
    # samples (exits, the scheduler) count too.
    least = limits["MIN_VMS_GUEST_SHARE_PERCENT" if len(vms) > 1 else "MIN_GUEST_SHARE_PERCENT"]
    check_guest_share(v, guest["samples"], samples, least)
    if stock:
        check_unknown_thread(v, guest["unknown_thread"], guest["samples"],
                             limits["MAX_UNKNOWN_THREAD_PERCENT"], "", "the sideband")


def check_lost(v, rec, samples, lost, percent, max_lost):
    whole = samples + lost
    if samples == 0:
        v.bad("the recording holds no samples (lost %d)" % lost)
    elif percent <= max_lost:
        v.ok("the recording lost %d of %d samples (%s%%; at most %s%%), at %s a second in %ss for %ss, attempt %s"
             % (lost, whole, rec["lost_percent"], num(max_lost), rec.get("rate", ""),
                rec.get("took", ""), rec.get("seconds", ""), rec.get("attempts", "")))
    else:
        v.bad("the recording lost %d of %d samples (%s%%, more than %s%%)"
              % (lost, whole, rec["lost_percent"], num(max_lost)))


def check_asked(v, rec, samples, least):
    """The samples recorded, of those asked for: the rate for the seconds
    recorded on each CPU that ran a vCPU (a CPU samples at the rate, and a
    vCPU thread runs on one CPU at a time)."""
    try:
        rate, seconds = int(rec["rate"]), int(rec["seconds"])
        cpus = min(int(rec["cpus"]), int(rec["vcpus"]))
    except (KeyError, ValueError):
        v.bad("recording.txt does not say the rate, seconds, CPUs and vCPUs it recorded")
        return
    asked = rate * seconds * cpus
    figure = "%d samples recorded, %s of the %d asked for (%d a second for %d s on %d CPU%s)" % (
        samples, pct(samples, asked), asked, rate, seconds, cpus, "" if cpus == 1 else "s")
    v.check(100 * samples >= least * asked, "%s (at least %s%%)" % (figure, num(least)),
            "only %s (need %s%%)" % (figure, num(least)))


def check_sideband(v, lost):
    # Lost context switches would give samples to the wrong process.
    v.check(lost == "0", "the guest's sideband lost no events",
            "the guest's sideband lost events (%s PERF_RECORD_LOST records)" % (lost or "unknown"))


def check_guest_share(v, shown, recorded, least):
    """The guest samples perf kvm script shows, of all the recording's."""
    figure = "%d guest samples in perf kvm script, %s of the recording's %d" % (
        shown, pct(shown, recorded), recorded)
    v.check(shown > 0 and at_least(shown, recorded, least),
            "%s (at least %s%%)" % (figure, num(least)),
            "only %s (need %s%%)" % (figure, num(least)))


def check_unknown_thread(v, unknown, samples, most, who, sideband):
    """Samples of the unknown guest thread: those within the guest clock's
    error of a guest context switch are by design; a clock that is off or
    a sideband that ends early makes most of them so.  who: "VM LABEL: " or "";
    sideband: what did not place them."""
    mine = "its " if who else ""
    guest = "" if who else "guest "
    if not samples:
        v.bad("%sno %ssamples: the unknown guest thread's share of them can't be judged" % (who, guest))
        return
    figure = "%s%d of %s%d %ssamples are the unknown guest thread's" % (
        who, unknown, mine, samples, guest)
    if at_most(unknown, samples, most):
        v.ok("%s (%s; at most %s%%)" % (figure, pct(unknown, samples), num(most)))
    else:
        v.bad("%s (%s, more than %s%%): %s did not place them"
              % (figure, pct(unknown, samples), num(most), sideband))


# -- one VM's demo (demo/check-output.sh) -----------------------------------

OUTPUT_FILES = ("perf.data", "perf-kvm-script.txt", "folded.txt", "flamegraph.html",
                "flamegraph.png", "flamegraph.labels", "top-stacks.txt")


def check_output(v, outdir, limits):
    """What 'make demo' wrote for one VM: a good recording, guest chains,
    complete kernel chains, hot loops that reach main, the stock guest's
    programs told apart, known paths in the folded stacks, and a flame
    graph that renders with those names visible."""
    if not require_files(v, outdir, OUTPUT_FILES):
        return
    check_recording(v, outdir, limits)
    samples = parse_script(outdir / "perf-kvm-script.txt")
    stock = read_text(outdir / "demo-guest") == "stock"
    check_chained(v, samples, limits["MIN_CHAINED_PERCENT"])
    check_kernel_chains(v, samples, limits["MIN_COMPLETE_KERNEL_PERCENT"])
    check_hot_loop(v, samples, limits)
    folded = parse_folded(outdir / "folded.txt")
    if stock:
        check_programs(v, outdir, samples, limits["MIN_LEAF_SHARE_PERCENT"])
        for prog in HOT_LEAVES:
            v.check(any(stack.startswith(prog + ";") for stack, _ in folded),
                    "the flame graph has %s's stacks under its own name" % prog,
                    "the flame graph has no stacks under %s" % prog)
    check_paths(v, folded, KERNEL_PATHS + ((STOCK_PATH if stock else FP_PATH),))
    check_labels(v, folded, outdir / "flamegraph.labels", limits["LABEL_MIN_PERMILLE"])
    vm = "demo-%s (%s)" % (read_text(outdir / "demo-guest"), read_text(outdir / "guest-qemu.pid"))
    have = flamegraph_first_level(outdir / "flamegraph.html")
    v.check(have == vm, "the flame graph's first level is the VM, %s" % vm,
            "the flame graph's first level is not the VM %s alone: %s" % (vm, have))
    check_png(v, outdir / "flamegraph.png", limits["MIN_PNG_BYTES"])
    if recorded_host(outdir):
        check_vcpu(v, outdir, limits)


def recorded_host(outdir):
    """Whether the demo recorded the host's side too (demo/in-l1.sh)."""
    return read_text(outdir / "machines") == "--host --guest"


# The host kernel's frames of a guest sample's host part, and where they
# must go: through KVM_RUN down to the system call entry.
HOST_KERNEL_DSO = "[kernel.kallsyms]"
VCPU_RUN = "kvm_arch_vcpu_ioctl_run"
SYSCALL_ENTRY = re.compile(r"^entry_SYSCALL_64")
VCPU_THREAD = re.compile(r"^CPU_\d+/KVM$")


def host_part(sample):
    """The index of the first host kernel frame of a guest sample with the
    host part (its first frame is the guest's, and host kernel frames
    follow), else None: host samples start in the host kernel, or in host
    user space, which calls into no kernel frame."""
    if not sample.frames or sample.frames[0].dso == HOST_KERNEL_DSO:
        return None
    for i, frame in enumerate(sample.frames):
        if frame.dso == HOST_KERNEL_DSO:
            return i
    return None


def check_vcpu(v, outdir, limits):
    """The whole vCPU thread (one VM recorded with perf kvm --host
    --guest): most guest samples carry host kernel frames through KVM_RUN
    down to the system call entry; no host frame resolved in the guest's
    kernel, nor a guest frame in the host's; the vCPU threads' host
    samples beside their guest samples, under the VM; and a flame graph
    that shows it."""
    if not require_files(v, outdir, ("perf-kvm-vcpu-script.txt", "folded-vcpu.txt",
                                     "flamegraph-vcpu.html", "flamegraph-vcpu.labels")):
        return
    guest = len(parse_script(outdir / "perf-kvm-script.txt"))
    joined, complete, mixed = 0, 0, []
    for sample in parse_script(outdir / "perf-kvm-vcpu-script.txt"):
        start = host_part(sample)
        if start is None:
            continue
        joined += 1
        host = sample.frames[start:]
        kernel = [f.sym for f in host if f.dso == HOST_KERNEL_DSO]
        complete += VCPU_RUN in kernel and any(SYSCALL_ENTRY.match(s) for s in kernel)
        if any(f.dso.startswith("[guest.") for f in host):
            mixed.append(sample.header)
    check_share(v, complete, guest, limits["MIN_VCPU_HOST_PERCENT"], "guest samples",
                "carry host kernel frames through %s down to the system call entry" % VCPU_RUN,
                "carry host kernel frames through %s down to the system call entry" % VCPU_RUN)
    v.check(not mixed, "no guest kernel frame among the host frames of %d guest samples" % joined,
            "%d guest samples have guest kernel frames among their host frames" % len(mixed))
    for header in mixed[:EXAMPLES]:
        v.example(header)
    # Folded: VM;thread;outermost;...  The vCPU threads hold the guest
    # samples and, beside them, their own host samples.
    vm = "demo-%s_(%s)" % (read_text(outdir / "demo-guest"), read_text(outdir / "guest-qemu.pid"))
    under = Counter()
    for stack, count in parse_folded(outdir / "folded-vcpu.txt"):
        frames = stack.split(";")
        if len(frames) > 2 and frames[0] == vm and VCPU_THREAD.match(frames[1]):
            under[frames[1]] += count
    v.check(sum(under.values()) >= joined,
            "the VM's vCPU threads (%s) hold %d samples: the %d joined guest samples and %d host samples beside them"
            % (", ".join(sorted(under)) or "none", sum(under.values()), joined,
               sum(under.values()) - joined),
            "the VM's vCPU threads (%s) hold %d samples, fewer than its %d guest samples with the host part"
            % (", ".join(sorted(under)) or "none", sum(under.values()), joined))
    try:
        labels = set((outdir / "flamegraph-vcpu.labels").read_text(errors="replace").splitlines())
    except OSError:
        labels = set()
    shown = [name for name in (VCPU_RUN, "entry_SYSCALL_64_after_hwframe") if name in labels]
    v.check(len(shown) == 2 and any(re.match(r"CPU \d+/KVM", label) for label in labels),
            "the rendered flame graph of the vCPU thread shows its vCPU thread, %s" % ", ".join(shown),
            "the rendered flame graph of the vCPU thread does not show a vCPU thread, %s and the system call entry (it shows %s)"
            % (VCPU_RUN, ", ".join(shown) or "neither"))
    check_png(v, outdir / "flamegraph-vcpu.png", limits["MIN_PNG_BYTES"])


def check_share(v, part, whole, least, what, ok_has, bad_has):
    """PART of WHOLE WHAT (samples) are at least LEAST percent."""
    v.check(at_least(part, whole, least),
            "%d of %d %s (%s) %s" % (part, whole, what, pct(part, whole), ok_has),
            "only %d of %d %s %s (need %s%%)" % (part, whole, what, bad_has, num(least)))


def check_chained(v, samples, least):
    chained = sum(beyond_ip(s) for s in samples)
    beyond = "have guest frames beyond the IP"
    check_share(v, chained, len(samples), least, "guest samples", beyond, beyond)


def check_kernel_chains(v, samples, least):
    kernel = [s for s in samples if s.frames and is_kernel(s.frames[0])]
    complete = sum(map(kernel_chain_complete, kernel))
    check_share(v, complete, len(kernel), least, "guest kernel samples",
                "have a chain that reaches a kernel entry point with every kernel frame resolved",
                "have a complete, resolved chain to a kernel entry point")


def check_hot_loop(v, samples, limits):
    """The workload's hot loop (its program's, whoever ran it) holds its
    share of the samples, and reaches main."""
    least, share = limits["MIN_LEAF_MAIN_PERCENT"], limits["MIN_LEAF_SHARE_PERCENT"]
    leaf = [s for s in samples if s.frames and not is_kernel(s.frames[0])
            and s.frames[0].sym in HOT_LEAVES["workload"]]
    check_leaf_share(v, "the workload's hot loop", len(leaf), len(samples), share)
    reach = sum(map(has_main, leaf))
    v.check(at_least(reach, len(leaf), least),
            "%d of %d samples in the workload's hot loop (%s) have a chain that reaches main"
            % (reach, len(leaf), pct(reach, len(leaf))),
            "only %d of %d samples in the workload's hot loop have a chain that reaches main (need %s%%)"
            % (reach, len(leaf), num(least)))


def check_leaf_share(v, what, leaf, samples, least):
    """A hot leaf holds at least LEAST percent of the guest samples: a
    program that ran holds its share, whatever the recording's length."""
    figure = "%s holds %d of the %d guest samples (%s" % (what, leaf, samples, pct(leaf, samples))
    v.check(samples > 0 and 100 * leaf >= least * samples, "%s; at least %s%%)" % (figure, num(least)),
            "%s; need %s%%)" % (figure, num(least)))


def program_counts(samples):
    """Per program of the stock guest: samples in its hot leaf, those that
    are its own with a chain up to its main, and samples of it with a
    frame in another program's file; with examples of each failure."""
    leaf, good, cross, total, examples = Counter(), Counter(), Counter(), Counter(), []
    shown, cross_shown = Counter(), 0
    for s in samples:
        if not s.frames:
            continue
        prog = PROGRAM_OF_LEAF.get(s.frames[0].sym)
        if prog:
            leaf[prog] += 1
            if s.comm == prog and has_main(s):
                good[prog] += 1
            elif shown[prog] < EXAMPLES:
                shown[prog] += 1
                examples.append("a sample in %s's leaf: comm %s, frames %s"
                                % (prog, s.comm, symbols(s)))
        if s.comm in HOT_LEAVES:
            total[s.comm] += 1
            other = next((p for f in s.frames for p in HOT_LEAVES
                          if p != s.comm and f.dso.endswith("/bin/" + p)), None)
            if other:
                cross[s.comm] += 1
                if cross_shown < EXAMPLES:
                    cross_shown += 1
                    examples.append("a sample of %s with a frame in %s: %s"
                                    % (s.comm, other, symbols(s)))
    return leaf, good, cross, total, examples


def check_programs(v, outdir, samples, share):
    """The stock guest's three programs, told apart by its sideband: every
    sample in a program's hot leaf is that program's (by comm), with a
    chain up to its main, and no sample of one program has a frame in
    another's file.  The unknown guest thread's samples are counted, not
    checked (recording-check bounds them): their user frames are
    addresses, in no leaf."""
    leaf, good, cross, total, examples = program_counts(samples)
    unknown = sum(s.comm == UNKNOWN_THREAD for s in samples)
    # What was counted, for whoever reads the output directory later.
    with open(outdir / "programs.txt", "w") as out:
        for line in examples:
            out.write("  %s\n" % line)
        for prog in HOT_LEAVES:
            out.write("%s %d %d %d\n" % (prog, leaf[prog], good[prog], cross[prog]))
        out.write("unknown %d %d\n" % (unknown, len(samples)))
    for line in examples:
        v.example(line)
    for prog in HOT_LEAVES:
        check_leaf_share(v, "%s's hot leaf" % prog, leaf[prog], len(samples), share)
        v.check(leaf[prog] > 0 and good[prog] == leaf[prog],
                "all %d samples in %s's hot leaf are %s's, with a chain up to its main" % (leaf[prog], prog, prog),
                "%d of %d samples in %s's hot leaf are %s's with a chain up to its main (need all)"
                % (good[prog], leaf[prog], prog, prog))
        if not total[prog]:
            v.bad("no samples of %s to look for frames in another program's file" % prog)
        else:
            v.check(cross[prog] == 0, "no sample of %s has a frame in another program's file" % prog,
                    "%d samples of %s have frames in another program's file" % (cross[prog], prog))
    v.check(samples, "%d of %d guest samples are the unknown guest thread's (before the guest's sideband knew)"
            % (unknown, len(samples)), "no guest samples to tell the programs apart in")


def check_paths(v, folded, paths):
    for path in paths:
        found = re.compile(path)
        v.check(any(found.search(stack) for stack, _ in folded),
                "folded stacks have %s" % path, "no %s in the folded stacks" % path)


def check_labels(v, folded, labels_path, least):
    """The page as Chromium rendered it (demo/render.js): d3-flame-graph
    shows a frame's name only when the frame is wide enough to read.  How
    much of the time the guest spends in page faults varies from run to
    run: a name must be shown when its frames hold least thousandths of
    the samples or more, and main and the system-call path always."""
    if not sum(count for _, count in folded):
        v.bad("no samples in the folded stacks to tell which names the flame graph must show")
        return
    try:
        labels = set(labels_path.read_text(errors="replace").splitlines())
    except OSError:
        labels = set()
    for name in LABELLED:
        permille = label_permille(folded, name)
        share = "%d.%d%% of the samples" % (permille // 10, permille % 10)
        if name in labels:
            v.ok("the rendered flame graph shows %s (%s)" % (name, share))
        elif permille < least and name not in ALWAYS_LABELLED:
            v.ok("%s holds %s, too narrow a frame for its label" % (name, share))
        else:
            v.bad("the rendered flame graph does not show %s (%s)" % (name, share))


def flamegraph_first_level(path, order=lambda names: names):
    """The first level's names joined by ';', or why it could not be read."""
    try:
        return ";".join(order(first_level(parse_flamegraph(path))))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, Error) as err:
        return "unreadable flame graph data (%s)" % err


def check_png(v, path, least):
    try:
        data = path.read_bytes()
    except OSError:
        data = b""
    v.check(data.startswith(PNG_SIGNATURE) and len(data) > least,
            "%s is a picture (%d bytes)" % (path.name, len(data)),
            "%s is not a picture of the flame graph (%d bytes%s; need a PNG of more than %s bytes)"
            % (path.name, len(data), "" if data.startswith(PNG_SIGNATURE) else ", no PNG signature",
               num(least)))


# -- several VMs (demo/check-vms.sh) ------------------------------------------

VMS_FILES = ("vms", "perf.data", "perf-kvm-script.txt", "perf-kvm-script.err", "folded-vm.txt",
             "flamegraph.html", "top-stacks.txt")
# What perf kvm script says at the end of a VM whose guest samples carry no
# guest call chain: the VM as "NAME (PID)".
UNCHAINED_VM = re.compile(r"^(.+ \(\d+\)): \d+ of \d+ guest samples carry no guest call chain")
GUEST_KERNEL_DSO = re.compile(r"\[guest\.kernel\.kallsyms\.(\d+)\]")
GUESTMOUNT_DSO = re.compile(r"/guestmount/(\d+)/")


def sample_vm(sample):
    """The VM (QEMU PID) of a sample: "VM: PID" once its VM's sideband
    placed it on a guest thread (then PID/TID are the guest's), else the
    host's PID of its vCPU thread, its QEMU's; "?" if neither."""
    if sample.vm is not None:
        return str(sample.vm)
    return "?" if sample.pid is None else str(sample.pid)


def foreign_dso(sample, vm, kind):
    """The first of sample's files that is another VM's: a guest kernel or
    guestmount of another PID, or, for a VM without a sideband, a file
    outside guestmount (a build-id cache's is a sideband VM's)."""
    for frame in sample.frames:
        match = GUEST_KERNEL_DSO.fullmatch(frame.dso) or GUESTMOUNT_DSO.search(frame.dso)
        if match:
            if match.group(1) != vm:
                return frame.dso
        elif frame.dso.startswith("/") and kind != "stock":
            return frame.dso
    return None


class VmCounts:
    """What one VM's samples hold: its samples, those with a chain, in a
    hot leaf, in a hot leaf with a chain to main (under their program),
    with a frame in another VM's files, of the unknown guest thread,
    whose IP resolved, in the guest kernel, in the guest kernel with a
    complete chain; and the vCPUs of the samples that reached main."""
    FIELDS = ("samples", "chained", "leaf", "leaf_main", "others", "unknown", "resolved",
              "kernel", "kernel_complete")

    def __init__(self):
        for name in self.FIELDS:
            setattr(self, name, 0)
        self.vcpus = set()

    def line(self, pid):
        """Its line of vms-check.txt: PID, FIELDS, how many vCPUs."""
        return " ".join([pid] + [str(getattr(self, name)) for name in self.FIELDS]
                        + [str(len(self.vcpus))])


def vm_counts(samples, vms):
    """Per VM (by QEMU PID): VmCounts, and the examples of what failed."""
    kinds = {vm.pid: vm for vm in vms}
    per_vm, examples = {}, []
    shown, other_shown = Counter(), 0
    for s in samples:
        pid = sample_vm(s)
        vm = kinds.get(pid)
        c = per_vm.setdefault(pid, VmCounts())
        c.samples += 1
        c.chained += beyond_ip(s)
        c.resolved += bool(s.frames) and s.frames[0].sym != "[unknown]"
        c.unknown += s.comm == UNKNOWN_THREAD
        if s.frames and is_kernel(s.frames[0]):
            c.kernel += 1
            c.kernel_complete += kernel_chain_complete(s)
        prog = PROGRAM_OF_LEAF.get(s.frames[0].sym) if s.frames else None
        if prog:
            c.leaf += 1
            # where the sideband names the guest's processes, under that program
            if has_main(s) and (vm is None or vm.kind != "stock" or s.comm == prog):
                c.leaf_main += 1
                if s.vcpu is not None:
                    c.vcpus.add(s.vcpu)
            elif vm is not None and vm.level > 0 and shown[pid] < EXAMPLES:
                shown[pid] += 1
                examples.append("a sample of VM %s in %s: comm %s, frames%s"
                                % (pid, s.frames[0].sym, s.comm, symbols(s)))
        dso = foreign_dso(s, pid, vm.kind if vm else "")
        if dso:
            c.others += 1
            if other_shown < EXAMPLES:
                other_shown += 1
                examples.append("a sample of VM %s with a frame in %s: frames%s"
                                % (pid, dso, symbols(s)))
    return per_vm, examples


def check_vms(v, outdir, limits):
    """Several VMs recorded at once, told apart: each VM's samples, its
    chains or their absence, its files only, and the flame graph split by
    VM."""
    if not require_files(v, outdir, VMS_FILES):
        return
    vms = parse_vms(outdir / "vms")
    if len(vms) < 2:
        v.bad("%s names fewer than two VMs" % (outdir / "vms"))
    check_recording(v, outdir, limits)
    samples = parse_script(outdir / "perf-kvm-script.txt")
    per_vm, examples = vm_counts(samples, vms)
    pids = {vm.pid for vm in vms}
    strays = ["%d samples of %s, which is none of the VMs" % (c.samples, pid)
              for pid, c in per_vm.items() if pid not in pids]
    with open(outdir / "vms-check.txt", "w") as out:
        for line in examples + strays:
            out.write("  %s\n" % line)
        for vm in vms:
            out.write(per_vm.get(vm.pid, VmCounts()).line(vm.pid) + "\n")
    for line in examples + strays:
        v.example(line)
    if strays:
        v.bad("samples of no VM (above)")
    unchained = unchained_vms(outdir / "perf-kvm-script.err")
    for vm in vms:
        check_vm(v, vm, per_vm.get(vm.pid, VmCounts()), len(samples), len(vms), limits)
        check_vm_named(v, vm, unchained)
    want = sorted("%s (%s)" % (vm.name, vm.pid) for vm in vms)
    have = flamegraph_first_level(outdir / "flamegraph.html", sorted)
    v.check(have == ";".join(want), "the flame graph's first level is the VMs: %s" % have,
            "the flame graph's first level is not the VMs (%s): %s" % (";".join(want), have))
    check_top_stacks(v, outdir / "top-stacks.txt", set(want))


def unchained_vms(path):
    """The VMs that perf kvm script said carry no guest call chain."""
    with open(path, errors="replace") as f:
        return {m.group(1) for m in map(UNCHAINED_VM.match, f) if m}


def check_vm_named(v, vm, unchained):
    """perf names the VM that did not opt in, and no VM that did."""
    label = "%s (%s, %s guest, level %d)" % (vm.name, vm.pid, vm.kind, vm.level)
    named = "%s (%s)" % (vm.name, vm.pid) in unchained
    if vm.level == 0:
        v.check(named, "%s: perf kvm script says its guest samples carry no guest call chain" % label,
                "%s: perf kvm script does not say that its guest samples carry no guest call chain" % label)
    else:
        v.check(not named, "%s: perf kvm script says nothing of missing guest chains" % label,
                "%s: perf kvm script says its guest samples carry no guest call chain, but it opted in" % label)


def check_vm(v, vm, c, total, nvms, limits):
    label = "%s (%s, %s guest, level %d)" % (vm.name, vm.pid, vm.kind, vm.level)
    share = limits["MIN_VM_SHARE_PERCENT"]
    # An even share of the guest samples is total / nvms; each VM must hold
    # share% of it, and at least one sample.
    least = max(1, math.ceil(total * share / (100 * nvms)))
    basis = "%s%% of an even share of the %d guest samples among %d VMs" % (num(share), total, nvms)
    if c.samples < least:
        v.bad("%s: %d samples (need %d, %s)" % (label, c.samples, least, basis))
        return
    v.ok("%s: %d samples (at least %d, %s)" % (label, c.samples, least, basis))
    if vm.level == 0:
        v.check(c.chained == 0,
                "%s: none of its %d samples has a guest frame beyond the instruction pointer" % (label, c.samples),
                "%s: %d of its %d samples have guest frames, but it did not opt in" % (label, c.chained, c.samples))
        # Its instruction pointers, in its own kernel and programs.
        least = limits["MIN_RESOLVED_IP_PERCENT"]
        v.check(at_least(c.resolved, c.samples, least),
                "%s: %d of its %d instruction pointers resolved to a symbol (%s; at least %s%%)"
                % (label, c.resolved, c.samples, pct(c.resolved, c.samples), num(least)),
                "%s: only %d of its %d instruction pointers resolved to a symbol (%s; need %s%%)"
                % (label, c.resolved, c.samples, pct(c.resolved, c.samples), num(least)))
    else:
        # Its kernel stacks, unwound (the stock guest's with the ORC tables
        # of its kernel image, which perf found by build id).
        least = limits["MIN_COMPLETE_KERNEL_PERCENT"]
        v.check(c.kernel > 0 and at_least(c.kernel_complete, c.kernel, least),
                "%s: %d of its %d guest kernel samples have a complete, resolved chain to a kernel entry point (%s; at least %s%%)"
                % (label, c.kernel_complete, c.kernel, pct(c.kernel_complete, c.kernel), num(least)),
                "%s: only %d of its %d guest kernel samples have a complete, resolved chain to a kernel entry point (%s; need %s%%)"
                % (label, c.kernel_complete, c.kernel, pct(c.kernel_complete, c.kernel), num(least)))
        check_leaf_share(v, "%s: its programs' hot leaves" % label, c.leaf, c.samples,
                         limits["MIN_LEAF_SHARE_PERCENT"])
        least = limits["MIN_LEAF_MAIN_PERCENT"]
        v.check(at_least(c.leaf_main, c.leaf, least),
                "%s: %d of its %d samples in its programs' hot leaves reach main under their program"
                % (label, c.leaf_main, c.leaf),
                "%s: %d of its %d samples in its programs' hot leaves reach main under their program (need %s%%)"
                % (label, c.leaf_main, c.leaf, num(least)))
    v.check(c.others == 0,
            "%s: no frame of its %d samples is in another VM's files" % (label, c.samples),
            "%s: %d of its samples have frames in another VM's files" % (label, c.others))
    # A guest of several vCPUs: each vCPU's samples on the thread its guest
    # ran there, from its sideband's context switches.
    if vm.kind == "stock" and vm.level > 0 and vm.vcpus > 1:
        v.check(len(c.vcpus) == vm.vcpus,
                "%s: on each of its %d vCPUs, samples in its programs' hot leaves reach main under their program"
                % (label, vm.vcpus),
                "%s: samples in its programs' hot leaves reach main under their program on %d of its %d vCPUs"
                % (label, len(c.vcpus), vm.vcpus))
    if vm.kind == "stock":
        check_unknown_thread(v, c.unknown, c.samples, limits["MAX_UNKNOWN_THREAD_PERCENT"],
                             label + ": ", "its sideband")


TOP_STACK_LINE = re.compile(r" *\d+ +[0-9.]+%  (.*?): ")


def check_top_stacks(v, path, vms):
    """The ten hottest stacks, "COUNT SHARE  VM (PID): comm: stack", each
    naming one of the VMs."""
    lines = path.read_text(errors="replace").splitlines()
    named = [TOP_STACK_LINE.match(line) for line in lines]
    v.check(len(lines) == TOP_STACKS and all(m and m.group(1) in vms for m in named),
            "each of the ten hottest stacks says its VM",
            "the ten hottest stacks do not each say their VM: %s" % "\n".join(lines[:3]))


# -- the command line ---------------------------------------------------------

def run_check(check, outdir):
    v = Verdicts()
    check(v, Path(outdir), load_thresholds())
    return 1 if v.failed else 0


def print_counts(path, key):
    figures = counts(parse_script(path))
    if key:
        if key not in figures:
            raise Error("no count %s (%s)" % (key, ", ".join(figures)))
        print(figures[key])
    else:
        for name, value in figures.items():
            print(name, value)
    return 0


def print_threshold(name):
    limits = load_thresholds()
    if name not in limits:
        raise Error("no threshold %s in %s" % (name, THRESHOLDS))
    print(num(limits[name]))
    return 0


def main(argv):
    parser = argparse.ArgumentParser(prog="demo/checks.py", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, what in (("recording", "the recording"), ("output", "one VM's demo output"),
                       ("vms", "several VMs' demo output")):
        sub.add_parser(name, help="check " + what).add_argument("outdir")
    cmd = sub.add_parser("counts", help="what a perf kvm script output holds")
    cmd.add_argument("file")
    cmd.add_argument("key", nargs="?")
    sub.add_parser("threshold", help="a bound of thresholds.conf").add_argument("name")
    args = parser.parse_args(argv)
    checks = {"recording": check_recording, "output": check_output, "vms": check_vms}
    try:
        if args.command in checks:
            return run_check(checks[args.command], args.outdir)
        if args.command == "counts":
            return print_counts(args.file, args.key)
        return print_threshold(args.name)
    except (Error, OSError) as err:
        print("[checks] error: %s" % err, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
