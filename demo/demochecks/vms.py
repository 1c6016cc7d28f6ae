"""Several VMs' demo output (demo/check-vms.sh)."""
import math
import re
from collections import Counter
from demochecks.read import (
    EXAMPLES,
    PROGRAM_OF_LEAF,
    TOP_STACKS,
    UNKNOWN_THREAD,
    beyond_ip,
    parse_script,
    parse_vms)
from demochecks.figures import (
    at_least,
    has_main,
    is_kernel,
    kernel_chain_complete,
    num,
    pct,
    require_files,
    symbols)
from demochecks.recording import check_recording, check_unknown_thread
from demochecks.output import check_leaf_share, flamegraph_first_level


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
        check_leaf_share(v, "%s: its programs' hot leaves hold" % label, c.leaf, c.samples,
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
        # A VM not opted in records its guest's IP alone: a sample inside
        # its guest's context switch has nothing to tell its thread by.
        bound = "MAX_UNKNOWN_THREAD_PERCENT" if vm.level else "MAX_UNKNOWN_THREAD_PERCENT_LEVEL0"
        check_unknown_thread(v, c.unknown, c.samples, limits[bound], label + ": ", "its sideband")


TOP_STACK_LINE = re.compile(r" *\d+ +[0-9.]+%  (.*?): ")


def check_top_stacks(v, path, vms):
    """The ten hottest stacks, "COUNT SHARE  VM (PID): comm: stack", each
    naming one of the VMs."""
    lines = path.read_text(errors="replace").splitlines()
    named = [TOP_STACK_LINE.match(line) for line in lines]
    v.check(len(lines) == TOP_STACKS and all(m and m.group(1) in vms for m in named),
            "each of the ten hottest stacks says its VM",
            "the ten hottest stacks do not each say their VM: %s" % "\n".join(lines[:3]))
