"""One VM's demo output (demo/check-output.sh)."""
import re
from collections import Counter
from demochecks.read import (
    ALWAYS_LABELLED,
    EXAMPLES,
    Error,
    FP_PATH,
    HOT_LEAVES,
    KERNEL_PATHS,
    LABELLED,
    PNG_SIGNATURE,
    PROGRAM_OF_LEAF,
    STOCK_PATH,
    UNKNOWN_THREAD,
    beyond_ip,
    first_level,
    parse_flamegraph,
    parse_folded,
    parse_gecko,
    parse_script,
    read_text,
    recorded_host)
from demochecks.figures import (
    at_least,
    has_main,
    is_kernel,
    kernel_chain_complete,
    label_permille,
    num,
    pct,
    require_files,
    symbols)
from demochecks.recording import check_recording


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
    # The bare guest runs the stock guest's programs, profiled from the host alone.
    stock = read_text(outdir / "demo-guest") in ("stock", "bare")
    check_chained(v, samples, limits["MIN_CHAINED_PERCENT"])
    check_kernel_chains(v, samples, limits["MIN_COMPLETE_KERNEL_PERCENT"])
    # The stock guest's three programs' leaves, shares and all, are
    # check_programs'.
    check_hot_loop(v, samples, limits, share=not stock)
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
    joined, complete, named, mixed = 0, 0, 0, []
    for sample in parse_script(outdir / "perf-kvm-vcpu-script.txt"):
        start = host_part(sample)
        if start is None:
            continue
        joined += 1
        host = sample.frames[start:]
        kernel = [f.sym for f in host if f.dso == HOST_KERNEL_DSO]
        whole = VCPU_RUN in kernel and any(SYSCALL_ENTRY.match(s) for s in kernel)
        complete += whole
        # The profile shows the guest frames perf named (a frame in a
        # guest vDSO the host's reads name //anon is an address alone).
        named += whole and any(f.sym != "[unknown]" for f in sample.frames[:start])
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
    check_gecko(v, outdir / "gecko-vcpu.json", vm, named)
    check_report_vcpu(v, outdir, limits["MIN_VCPU_HOST_PERCENT"])


def parse_report(path):
    """perf report --children -g none -t ';' --sort KEY,dso,sym: (children
    percent, key, dso, symbol) per entry."""
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return []
    rows = []
    for line in lines:
        fields = [f.strip() for f in line.split(";")]
        if line.startswith("#") or len(fields) != 5:
            continue
        try:
            children = float(fields[0].rstrip("%"))
        except ValueError:
            continue
        rows.append((children, fields[2], fields[3], fields[4].split("] ", 1)[-1]))
    return rows


def check_report_vcpu(v, outdir, least):
    """The vCPU thread in perf report (--children): sorted by vcpu_thread,
    a vCPU thread holds KVM_RUN in at least @least percent of the samples
    and the guest's frames; sorted by comm, KVM_RUN is the vCPU threads'
    alone, never charged to a guest program."""
    rows = [r for r in parse_report(outdir / "report-vcpu_thread.txt")
            if re.search(r"^\d+:CPU \d+/KVM$", r[1])]
    run = max((r[0] for r in rows if r[3] == VCPU_RUN), default=0.0)
    guest = {r[1] for r in rows if r[2].startswith("[guest.")}
    v.check(run >= least and guest,
            "perf report --sort vcpu_thread: %s with %s in %.1f%% of the samples and the guest's frames"
            % (", ".join(sorted(guest)), VCPU_RUN, run),
            "perf report --sort vcpu_thread: no vCPU thread with %s in %d%% of the samples and the "
            "guest's frames (%s in %.1f%%, guest frames under %s)"
            % (VCPU_RUN, least, VCPU_RUN, run, ", ".join(sorted(guest)) or "none"))
    by_comm = parse_report(outdir / "report-comm.txt")
    wrong = sorted({r[1] for r in by_comm if r[3] == VCPU_RUN and not re.match(r"CPU \d+/KVM$", r[1])})
    v.check(by_comm and not wrong,
            "perf report --children --sort comm: %s under the vCPU threads alone" % VCPU_RUN,
            "perf report --children --sort comm: %s under %s" % (VCPU_RUN, ", ".join(wrong) or "nothing"))


GUEST_PROCESS = re.compile(r" \(\d+\) \(in (.*)\)$")


def check_gecko(v, path, vm, least):
    """The whole vCPU thread in the Firefox Profiler's format (perf kvm
    --host --guest script report gecko): at least the @least guest samples
    with the host part down to the system call entry are on a vCPU thread,
    under its host frames through KVM_RUN, then the guest's process, in
    @vm, and its frames."""
    try:
        samples = parse_gecko(path)
    except Error as err:
        v.check(False, "", str(err))
        return
    threads, joined = set(), 0
    for thread, frames in samples:
        if not re.match(r"CPU \d+/KVM$", thread):
            continue
        threads.add(thread)
        run = [i for i, f in enumerate(frames) if f.startswith(VCPU_RUN + " (in ")]
        in_vm = [GUEST_PROCESS.search(f) for f in frames]
        guest = [i for i, m in enumerate(in_vm) if m and m.group(1) == vm.replace("_", " ")]
        joined += bool(run and guest and run[0] < guest[0] < len(frames) - 1)
    v.check(threads and joined >= least,
            "the Firefox Profiler's profile (gecko-vcpu.json) has %d samples of the vCPU threads (%s) "
            "under %s, then the guest's process and its frames" % (joined, ", ".join(sorted(threads)), VCPU_RUN),
            "the Firefox Profiler's profile (gecko-vcpu.json) has %d samples of vCPU threads (%s) under "
            "%s, then the guest's process and its frames, fewer than the %d joined guest samples"
            % (joined, ", ".join(sorted(threads)) or "none", VCPU_RUN, least))


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


def check_hot_loop(v, samples, limits, share):
    """The workload's hot loop (its program's, whoever ran it) reaches
    main, and (SHARE) holds its share of the samples."""
    least = limits["MIN_LEAF_MAIN_PERCENT"]
    leaf = [s for s in samples if s.frames and not is_kernel(s.frames[0])
            and s.frames[0].sym in HOT_LEAVES["workload"]]
    if share:
        check_leaf_share(v, "the workload's hot loop holds", len(leaf), len(samples),
                         limits["MIN_LEAF_SHARE_PERCENT"])
    reach = sum(map(has_main, leaf))
    v.check(at_least(reach, len(leaf), least),
            "%d of %d samples in the workload's hot loop (%s) have a chain that reaches main"
            % (reach, len(leaf), pct(reach, len(leaf))),
            "only %d of %d samples in the workload's hot loop have a chain that reaches main (need %s%%)"
            % (reach, len(leaf), num(least)))


def check_leaf_share(v, what, leaf, samples, least):
    """A hot leaf holds at least LEAST percent of the guest samples: a
    program that ran holds its share, whatever the recording's length."""
    figure = "%s %d of the %d guest samples (%s" % (what, leaf, samples, pct(leaf, samples))
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
        check_leaf_share(v, "%s's hot leaf holds" % prog, leaf[prog], len(samples), share)
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


SAMPLE_TIME = re.compile(r"\s(\d+\.\d+):")


def sample_time(sample):
    """A sample's timestamp as its header says it, or None."""
    match = SAMPLE_TIME.search(sample.header)
    return match.group(1) if match else None


def check_released(v, outdir, released_path):
    """A released perf (the series' base) reading the recording of the
    whole vCPU thread: none of a guest sample's host part, as this
    series' perf shows it (perf-kvm-vcpu-script.txt), among the frames
    the released perf shows for that sample (released_path, its perf
    script output of the same file), which would be host frames it
    resolved in the guest machine."""
    host_parts = {}
    for sample in parse_script(outdir / "perf-kvm-vcpu-script.txt"):
        start = host_part(sample)
        if start is not None and sample_time(sample):
            host_parts[sample_time(sample)] = {f.addr.lstrip("0") for f in sample.frames[start:]}
    compared, mixed = 0, []
    for sample in parse_script(released_path):
        host = host_parts.get(sample_time(sample))
        if host is None:
            continue
        compared += 1
        if host & {f.addr.lstrip("0") for f in sample.frames}:
            mixed.append(sample.header)
    v.check(host_parts and compared * 10 >= len(host_parts) * 9 and not mixed,
            "the released perf shows none of the host part among the frames of the %d of %d "
            "guest samples with a host part (it drops those chains)" % (compared, len(host_parts)),
            "the released perf shows the host part among the frames of %d of the %d of %d guest "
            "samples with a host part it showed" % (len(mixed), compared, len(host_parts)))
    for header in mixed[:EXAMPLES]:
        v.example(header)
