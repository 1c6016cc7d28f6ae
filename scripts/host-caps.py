#!/usr/bin/env python3
"""What this host and perf's builds can do: the conditions tests/expected
names for the skips it allows, probed once per run.

  host-caps.py [--root DIR] [--kvm-uapi KVM_H] [--perf NAME=PERF]...
  host-caps.py --only-perf --perf NAME=PERF...

prints a line per condition, "CONDITION<TAB>yes|no<TAB>EVIDENCE", in the
form scripts/results.py reads (check --caps FILE): where a condition holds
(yes), a test listed "skip if CONDITION" must skip and one listed "not run
if CONDITION" is left out; where it does not (no), both must pass.

Conditions are said as what the host lacks, so that "yes" is the reason to
skip.  The host's: no-pmu, no-hw-breakpoint (a breakpoint set on a
function that then runs does not count), no-schedstats,
no-function-tracer, no-uncore, no-amd-ibs, no-intel-pt, no-lbr,
not-intel-hybrid, not-arm, not-arm64, x86, no-kernel-debuginfo,
no-tsc-in-mmap-page, no-drm-pmu, not-intel, no-svm, no-pku and no-pcid (the
CPU's flags), no-nmi-sampler (the harness's NMI source, tests/nmi-sampler, not
loaded), no-nmi-source (neither a PMU nor nmi_sampler to take NMIs
with), no-kvm (no /dev/kvm to open), no-guest-callchain-level (KVM offers
a new VM no level of KVM_CAP_GUEST_CALLCHAINS, whose number --kvm-uapi's
header gives: a kernel without the series) and
no-unoffered-guest-callchain-level (it offers every level, so that nothing
can test a level it refuses).  With the
perf named "perf" (the host's build), what that perf can do here:
no-mem-events, no-branch-filter, no-kvm-stat (qemu-system in $PATH, /dev/kvm
and perf kvm stat record, as perf's kvm test asks), no-java-agent (jshell and
libperf-jvmti.so beside perf), no-python-perf-jit.  Each --perf build's:
NAME:without-FEATURE for each of its build options (perf version
--build-options) that is off, NAME:with-FEATURE for each that is on.

--root DIR reads /proc, /sys, /boot, /usr/lib/debug and /dev under DIR (a
made-up host, for the harness's own tests); the probes that open perf
events and run Python then answer "no" only where DIR is / .
"""

import ctypes
import fcntl
import glob
import os
import platform
import re
import shutil
import struct
import subprocess
import sys

PERF_TYPE_HARDWARE = 0
PERF_TYPE_SOFTWARE = 1
PERF_TYPE_BREAKPOINT = 5
PERF_COUNT_HW_CPU_CYCLES = 0
PERF_COUNT_SW_TASK_CLOCK = 1
HW_BREAKPOINT_X = 4
ATTR_EXCLUDE_KERNEL = 1 << 5
ATTR_EXCLUDE_HV = 1 << 6
NR_PERF_EVENT_OPEN = {"x86_64": 298, "aarch64": 241}
# struct perf_event_mmap_page: capabilities at byte 40; cap_user_time_zero
# is its bit 4.
MMAP_PAGE_CAPS = 40
CAP_USER_TIME_ZERO = 1 << 4


def perf_event_open(kind, config, flags=0, bp_type=0, bp_addr=0, bp_len=0):
    """A counting event of this thread, any CPU: (fd, None) or (-1, errno)."""
    nr = NR_PERF_EVENT_OPEN.get(platform.machine())
    if nr is None:
        return -1, "no perf_event_open number for " + platform.machine()
    # type, size, config, sample_period, sample_type, read_format, flags,
    # wakeup_events, bp_type, bp_addr, bp_len (PERF_ATTR_SIZE_VER1: 72).
    attr = struct.pack("=IIQQQQQIIQQ", kind, 72, config, 0, 0, 0, flags, 0,
                       bp_type, bp_addr, bp_len)
    buf = ctypes.create_string_buffer(attr, 128)
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(nr, buf, 0, -1, -1, 0)
    if fd < 0:
        return -1, os.strerror(ctypes.get_errno())
    return fd, None


def probe_pmu():
    fd, err = perf_event_open(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES,
                              ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV)
    if fd < 0:
        return True, f"perf_event_open(cycles): {err}"
    os.close(fd)
    return False, "perf_event_open(cycles) opened"


def probe_hw_breakpoint():
    """An execute breakpoint on libc's getppid(), then getppid() once."""
    libc = ctypes.CDLL(None, use_errno=True)
    addr = ctypes.cast(libc.getppid, ctypes.c_void_p).value
    fd, err = perf_event_open(PERF_TYPE_BREAKPOINT, 0,
                              ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV,
                              HW_BREAKPOINT_X, addr, ctypes.sizeof(ctypes.c_long))
    if fd < 0:
        return True, f"perf_event_open(breakpoint): {err}"
    try:
        libc.getppid()
        count = struct.unpack("=Q", os.read(fd, 8))[0]
    finally:
        os.close(fd)
    if count != 1:
        return True, f"an execute breakpoint on getppid() counted {count} of 1 call"
    return False, "an execute breakpoint on getppid() counted its call"


def probe_tsc_in_mmap_page():
    import mmap
    fd, err = perf_event_open(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK,
                              ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV)
    if fd < 0:
        return True, f"perf_event_open(task-clock): {err}"
    try:
        page = mmap.mmap(fd, mmap.PAGESIZE, prot=mmap.PROT_READ)
        caps = struct.unpack_from("=Q", page, MMAP_PAGE_CAPS)[0]
        page.close()
    finally:
        os.close(fd)
    if caps & CAP_USER_TIME_ZERO:
        return False, "cap_user_time_zero set"
    return True, "cap_user_time_zero clear (the clock is not the TSC)"


def exists(root, *patterns):
    """The first path under ROOT matching one of PATTERNS, or None."""
    for pattern in patterns:
        found = sorted(glob.glob(os.path.join(root, pattern.lstrip("/"))))
        if found:
            return found[0]
    return None


def lacks(root, what, *patterns):
    """(holds, evidence) for a condition "no file of PATTERNS"."""
    found = exists(root, *patterns)
    if found:
        return False, f"{what}: {found[len(root.rstrip('/')):]}"
    return True, f"no {what} ({', '.join(patterns)})"


def tracers(root):
    """The tracers the kernel offers; tracefs mounted first where it is
    not (as perf does), on the real host."""
    if os.path.realpath(root) == "/" and os.path.isdir("/sys/kernel/tracing") and \
            not os.path.exists("/sys/kernel/tracing/available_tracers"):
        subprocess.run(["mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    for d in ("sys/kernel/tracing", "sys/kernel/debug/tracing"):
        path = os.path.join(root, d, "available_tracers")
        try:
            with open(path, encoding="utf-8") as f:
                return f.read().split(), path
        except OSError:
            continue
    return None, "no available_tracers in tracefs"


def function_tracer(root):
    """(holds, evidence) for no-function-tracer: the function tracer, and
    the functions it can trace readable (perf ftrace -F reads them first;
    a kernel may offer the tracer and refuse the list)."""
    names, where = tracers(root)
    if names is None:
        return True, where
    if "function" not in names:
        return True, f"{where}: {' '.join(names)}"
    functions = os.path.join(os.path.dirname(where), "available_filter_functions")
    try:
        with open(functions, encoding="utf-8") as f:
            f.readline()
    except OSError as e:
        return True, f"function tracer, but {functions[len(root.rstrip('/')):]}: {e.strerror}"
    return False, f"{where}: function; available_filter_functions readable"


def host_conditions(root, uapi=None):
    real = os.path.realpath(root) == "/"
    release = os.uname().release if real else open(
        os.path.join(root, "proc/sys/kernel/osrelease"), encoding="utf-8").read().strip()
    machine = platform.machine() if real else open(
        os.path.join(root, "proc/machine"), encoding="utf-8").read().strip()
    cond = {}
    if real:
        cond["no-pmu"] = probe_pmu()
        cond["no-hw-breakpoint"] = probe_hw_breakpoint()
        cond["no-tsc-in-mmap-page"] = probe_tsc_in_mmap_page()
    else:
        cond["no-pmu"] = lacks(root, "CPU PMU", "sys/bus/event_source/devices/cpu/type",
                               "sys/bus/event_source/devices/cpu_core/type")
        cond["no-hw-breakpoint"] = lacks(root, "breakpoint probe (made up)",
                                         "hw-breakpoint-fires")
        cond["no-tsc-in-mmap-page"] = lacks(root, "TSC probe (made up)",
                                            "tsc-in-mmap-page")
    cond["no-schedstats"] = lacks(root, "/proc/schedstat", "proc/schedstat")
    cond["no-function-tracer"] = function_tracer(root)
    cond["no-uncore"] = lacks(root, "uncore PMU", "sys/bus/event_source/devices/uncore_*",
                              "sys/bus/event_source/devices/amd_df",
                              "sys/bus/event_source/devices/amd_l3")
    cond["no-amd-ibs"] = lacks(root, "AMD IBS PMU", "sys/bus/event_source/devices/ibs_op")
    cond["no-intel-pt"] = lacks(root, "Intel PT PMU", "sys/bus/event_source/devices/intel_pt")
    cond["no-lbr"] = lacks(root, "branch stack capability",
                           "sys/bus/event_source/devices/cpu/caps/branches",
                           "sys/bus/event_source/devices/cpu_core/caps/branches")
    cond["not-intel-hybrid"] = lacks(root, "hybrid PMU", "sys/bus/event_source/devices/cpu_core")
    cond["not-arm"] = (not machine.startswith(("arm", "aarch64")), f"machine {machine}")
    cond["not-arm64"] = (machine != "aarch64", f"machine {machine}")
    cond["x86"] = (machine in ("x86_64", "i686"), f"machine {machine}")
    vendor, flags, model = cpuinfo(root)
    cond["not-intel"] = (vendor != "GenuineIntel", f"vendor {vendor}")
    # perf stat's default metrics on Intel (TopdownL1) need the CPU PMU:
    # with none, perf stat without -e fails ("No supported events found").
    intel = vendor == "GenuineIntel"
    cond["intel-without-pmu"] = (intel and cond["no-pmu"][0],
                                 f"vendor {vendor}; {cond['no-pmu'][1]}")
    # perf's #system_tsc_freq on Intel: CPUID leaf 0x15, else the model
    # name's "@ 2.00GHz" (tools/perf/arch/x86/util/tsc.c); a model name
    # without it may leave it 0 (leaf 0x15 is not read here).
    freq = re.search(r"@ *[0-9.]+ *[GM]Hz", model)
    cond["intel-model-without-frequency"] = (intel and not freq,
                                             f"vendor {vendor}, model name '{model}'")
    cond["no-svm"] = ("svm" not in flags, f"CPU flags {'with' if 'svm' in flags else 'without'} svm")
    cond["no-pku"] = ("pku" not in flags, f"CPU flags {'with' if 'pku' in flags else 'without'} pku")
    cond["no-pcid"] = ("pcid" not in flags, f"CPU flags {'with' if 'pcid' in flags else 'without'} pcid")
    cond["no-kernel-debuginfo"] = lacks(root, f"vmlinux of {release}",
                                        f"usr/lib/debug/boot/vmlinux-{release}",
                                        f"usr/lib/debug/lib/modules/{release}/vmlinux",
                                        f"boot/vmlinux-{release}",
                                        f"lib/modules/{release}/build/vmlinux")
    cond["no-drm-pmu"] = lacks(root, "DRM device", "dev/dri/card*", "dev/dri/renderD*")
    cond["no-nmi-sampler"] = lacks(root, "nmi_sampler module", "sys/module/nmi_sampler")
    pmu, sampler = cond["no-pmu"], cond["no-nmi-sampler"]
    cond["no-nmi-source"] = (pmu[0] and sampler[0], f"{pmu[1]}; {sampler[1]}")
    cond["no-kvm"] = lacks(root, "/dev/kvm", "dev/kvm")
    if real:
        cond.update(probe_guest_callchain_levels(uapi))
    else:
        cond["no-guest-callchain-level"] = lacks(root, "levels probe (made up)",
                                                 "guest-callchain-level")
        cond["no-unoffered-guest-callchain-level"] = lacks(
            root, "levels probe (made up)", "unoffered-guest-callchain-level")
    return cond


KVM_CREATE_VM = 0xAE01
KVM_CHECK_EXTENSION = 0xAE03
GUEST_CALLCHAINS_LEVELS = ("KVM_GUEST_CALLCHAINS_CHAIN", "KVM_GUEST_CALLCHAINS_STACK")


def probe_guest_callchain_levels(uapi):
    """Whether KVM offers a new VM no level of guest call chains, and
    whether it offers the highest level the uapi header KVM_H names (no
    level left for a test of a refusal): two conditions."""
    none, every = probe_offered(uapi)
    return {"no-guest-callchain-level": none, "no-unoffered-guest-callchain-level": every}


def probe_offered(uapi):
    """The (holds, evidence) of no-guest-callchain-level and of
    no-unoffered-guest-callchain-level."""
    if not uapi:
        return (False, "no --kvm-uapi header: not probed"), (False, "no --kvm-uapi header: not probed")
    try:
        with open(uapi, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        return (False, f"{uapi}: {e.strerror}")
    cap = re.search(r"^#define KVM_CAP_GUEST_CALLCHAINS (\d+)", text, re.M)
    levels = [int(m.group(1)) for name in GUEST_CALLCHAINS_LEVELS
              for m in [re.search(rf"^#define {name}\s+(\d+)", text, re.M)] if m]
    if not cap or not levels:
        return ((False, f"{uapi} has no KVM_CAP_GUEST_CALLCHAINS levels"),) * 2
    try:
        kvm = os.open("/dev/kvm", os.O_RDWR | os.O_CLOEXEC)
    except OSError as e:
        return ((False, f"/dev/kvm: {e.strerror}"),) * 2
    try:
        vm = fcntl.ioctl(kvm, KVM_CREATE_VM, 0)
        try:
            offered = fcntl.ioctl(vm, KVM_CHECK_EXTENSION, int(cap.group(1)))
        finally:
            os.close(vm)
    except OSError as e:
        return ((False, f"KVM_CREATE_VM or KVM_CHECK_EXTENSION: {e.strerror}"),) * 2
    finally:
        os.close(kvm)
    evidence = f"KVM offers a VM level {offered} of {max(levels)}"
    return (offered == 0, evidence), (offered >= max(levels), evidence)


def cpuinfo(root):
    """The first CPU's vendor, flags and model name in ROOT's /proc/cpuinfo."""
    vendor, flags, model = "none", set(), ""
    try:
        with open(os.path.join(root, "proc/cpuinfo"), encoding="utf-8") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "vendor_id" and vendor == "none":
                    vendor = value.strip()
                elif key.strip() == "flags" and not flags:
                    flags = set(value.split())
                elif key.strip() == "model name" and not model:
                    model = value.strip()
    except OSError:
        vendor = "no /proc/cpuinfo"
    return vendor, flags, model


def runs(*cmd):
    """(exit status, output) of CMD; status 127 when it is not there."""
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return p.returncode, p.stdout


def last_line(text):
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "no output"


def perf_host_conditions(perf):
    """What the host's perf build can do on this host, asked as perf's own
    tests ask it."""
    cond = {}
    _, out = runs(perf, "mem", "record", "-e", "list")
    cond["no-mem-events"] = ("available" not in out,
                             f"perf mem record -e list: {last_line(out)}")
    rc, out = runs(perf, "record", "-o", "/dev/null", "--no-buildid",
                   "--branch-filter", "any,save_type,u", "--", "true")
    cond["no-branch-filter"] = (rc != 0, f"perf record --branch-filter any,save_type,u: "
                                f"{'records' if rc == 0 else last_line(out)}")
    # As perf's kvm test asks: QEMU in $PATH, /dev/kvm, perf kvm stat.
    qemu = shutil.which(f"qemu-system-{platform.machine()}")
    if not qemu:
        cond["no-kvm-stat"] = (True, f"qemu-system-{platform.machine()}: not found")
    elif not os.access("/dev/kvm", os.R_OK | os.W_OK):
        cond["no-kvm-stat"] = (True, "/dev/kvm not accessible")
    else:
        rc, out = runs(perf, "kvm", "stat", "record", "-o", "/dev/null", "-a", "sleep", "0.01")
        cond["no-kvm-stat"] = (rc != 0, f"{qemu}, /dev/kvm, perf kvm stat record: "
                               f"{'records' if rc == 0 else last_line(out)}")
    agent = os.path.join(os.path.dirname(perf), "libperf-jvmti.so")
    jshell = shutil.which("jshell")
    cond["no-java-agent"] = (not (jshell and os.path.exists(agent)),
                             f"jshell: {jshell or 'none'}; {agent}: "
                             f"{'there' if os.path.exists(agent) else 'not built'}")
    rc, out = runs(sys.executable, "-Xperf_jit", "-c",
                   "import sys; print(sys.is_stack_trampoline_active())")
    cond["no-python-perf-jit"] = (out.strip() != "True",
                                  f"{sys.executable} -Xperf_jit: {last_line(out)}")
    return cond


OPTION = re.compile(r"^\s*([\w-]+): \[ (on|OFF) +\]")


def perf_conditions(name, perf):
    out = subprocess.run([perf, "version", "--build-options"], capture_output=True,
                         text=True, check=True).stdout
    cond = {}
    for line in out.splitlines():
        m = OPTION.match(line)
        if m:
            on = m.group(2) == "on"
            cond[f"{name}:without-{m.group(1)}"] = (not on, f"{perf}: {m.group(1)} {m.group(2)}")
            cond[f"{name}:with-{m.group(1)}"] = (on, f"{perf}: {m.group(1)} {m.group(2)}")
    if not cond:
        sys.exit(f"{perf} version --build-options: no build option in its answer")
    return cond


def main(argv):
    root, perfs, only_perf, uapi = "/", [], False, None
    args = list(argv[1:])
    while args:
        opt = args.pop(0)
        if opt == "--only-perf":
            only_perf = True
        elif opt in ("--root", "--perf", "--kvm-uapi") and args:
            value = args.pop(0)
            if opt == "--root":
                root = value
            elif opt == "--kvm-uapi":
                uapi = value
            else:
                name, sep, path = value.partition("=")
                if not sep:
                    sys.exit(f"--perf NAME=PERF, not {value!r}")
                perfs.append((name, path))
        else:
            sys.exit(__doc__.split("\n\n")[1])
    cond = {} if only_perf else host_conditions(root, uapi)
    for name, path in perfs:
        if name == "perf" and not only_perf:
            cond.update(perf_host_conditions(path))
        cond.update(perf_conditions(name, path))
    for key, (holds, evidence) in cond.items():
        print(f"{key}\t{'yes' if holds else 'no'}\t{evidence}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
