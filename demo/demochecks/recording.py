"""The recording, before anything is judged or reused from it
(demo/recording-check.sh)."""

from demochecks.read import parse_recording, parse_script, parse_vms, read_text, recorded_host
from demochecks.figures import at_least, at_most, counts, num, pct


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
    kind = read_text(outdir / "demo-guest")
    stock = kind == "stock"
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
    elif kind == "bare":
        check_unknown_thread(v, guest["unknown_thread"], guest["samples"],
                             limits["AGENTLESS_MAX_UNKNOWN_THREAD_PERCENT"], "",
                             "the host's reads of guest memory")


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
