"""What make demo writes, read: the one parser the demo's checks use,
the bounds (demo/thresholds.conf) and the facts of the demo's guests."""
import json
import os
import re
from collections import namedtuple
from pathlib import Path

THRESHOLDS = Path(__file__).resolve().parent.parent / "thresholds.conf"
# in-l1.sh lets DEMO_MAX_LOST_PERCENT set the bound it records again
# above; the checks must judge by the same one.
ENV_OVERRIDES = {"MAX_LOST_PERCENT": "DEMO_MAX_LOST_PERCENT"}
THRESHOLD_NAMES = frozenset({
    "MAX_LOST_PERCENT", "MIN_GUEST_SHARE_PERCENT", "MIN_VMS_GUEST_SHARE_PERCENT",
    "MAX_UNKNOWN_THREAD_PERCENT", "MAX_UNKNOWN_THREAD_PERCENT_LEVEL0",
    "MIN_ASKED_SAMPLES_PERCENT",
    "MIN_CHAINED_PERCENT", "MIN_COMPLETE_KERNEL_PERCENT", "MIN_LEAF_MAIN_PERCENT",
    "MIN_LEAF_SHARE_PERCENT", "MIN_RESOLVED_IP_PERCENT", "MIN_VM_SHARE_PERCENT",
    "LABEL_MIN_PERMILLE", "MIN_PNG_BYTES", "MIN_VCPU_HOST_PERCENT",
    "AGENTLESS_MIN_PROCESS_PERCENT", "AGENTLESS_MIN_USER_SAMPLES",
    "AGENTLESS_MIN_USER_FRAME_PERCENT", "AGENTLESS_MIN_KERNEL_FRAME_PERCENT",
    "AGENTLESS_MAX_OTHER_PROCESS_PERCENT", "AGENTLESS_MAX_UNKNOWN_THREAD_PERCENT",
})

# perf kvm's thread for a guest sample its VM's sideband could not place.
UNKNOWN_THREAD = "[unknown guest thread]"
# A guest kernel chain is complete when its outermost kernel frame is an
# entry point (demochecks.figures.kernel_chain_complete()): a system
# call's, a kernel thread's or a CPU's start (the idle loop's chain, an
# interrupt's included, ends there), or, when the chain goes on in user
# mode, the entry of an interrupt or exception from user mode.  An
# interrupt handler that switched to the interrupt stack is not one: the
# code the interrupt hit is on the stack it left.  The return to user mode
# (EXIT_TO_USER) is the other end of an entry: the kernel stack holds no
# caller there, only what the entry saved, being put back.
KERNEL_ENTRY = re.compile(
    r"entry_SYSCALL_64(_after_hwframe)?|ret_from_fork(_asm)?"
    r"|(secondary|common)_startup_64|start_kernel|x86_64_start_(kernel|reservations)")
# __irqentry_text_end is where swapgs_restore_regs_and_return_to_usermode
# starts, and the name perf may give it.
EXIT_TO_USER = re.compile(
    r"syscall_return_via_sysret|entry_SYSRETQ_(unsafe_stack|end)|native_irq_return_iret"
    r"|swapgs_restore_regs_and_return_to_usermode|common_interrupt_return|__irqentry_text_end")
USER_ENTRY = re.compile(r"asm_(exc|sysvec|common)_[a-z0-9_]+")
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


def parse_gecko(path):
    """The samples of a Firefox Profiler (gecko) profile, as perf's gecko.py
    writes it: (thread name, frames outermost first), each frame its
    string, e.g. "func (in dso)"."""
    try:
        profile = json.loads(Path(path).read_text(errors="replace"))
        samples = []
        for thread in profile["threads"]:
            strings = thread["stringTable"]
            frames = thread["frameTable"]["data"]
            stacks = thread["stackTable"]["data"]
            for stack, *_ in thread["samples"]["data"]:
                chain = []
                while stack is not None:
                    prefix, frame = stacks[stack]
                    chain.append(strings[frames[frame][0]])
                    stack = prefix
                samples.append((thread["name"], chain[::-1]))
    except (OSError, ValueError, KeyError, IndexError, TypeError) as err:
        raise Error("no profile in %s: %s" % (path, err)) from err
    return samples


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


def recorded_host(outdir):
    """Whether the demo recorded the host's side too (demo/in-l1.sh)."""
    return read_text(outdir / "machines") == "--host --guest"
