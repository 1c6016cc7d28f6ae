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
  gecko-vcpu.json      its Firefox Profiler profile (script report gecko)
  vms                  a line per VM: NAME GUEST LEVEL QEMU-PID [VCPUS]
  agentless/truth-script.txt, agentless/perf-kvm-script.txt  the same
                       recording with the guest's sideband and with the
                       host's reads of guest memory
                       (tests/demo/agentless-test.sh)
and every bound the checks use is in demo/thresholds.conf.

  demo/checks.py recording OUTDIR   the recording (demo/recording-check.sh)
  demo/checks.py output OUTDIR      one VM's demo (demo/check-output.sh)
  demo/checks.py vms OUTDIR         several VMs' (demo/check-vms.sh)
  demo/checks.py agentless OUTDIR   the guest's processes and symbols from
                                    the host alone against its sideband
  demo/checks.py counts FILE [KEY]  what a perf kvm script output holds
  demo/checks.py threshold NAME     a bound, as the checks read it
  demo/checks.py released OUTDIR FILE  a released perf's perf script of
                                    OUTDIR's recording of the vCPU thread

A check prints "ok: ..." or "FAILED: ..." (and, indented, examples of what
failed); the exit status is 1 if any check failed.  This is their command
line; the checks are in demo/demochecks/, one module a concern: read.py
(the files above, the bounds, the facts of the demo's guests),
figures.py (figures of samples, verdicts), recording.py, output.py (one
VM), vms.py (several) and agentless.py (from the host alone).
"""
import argparse
import sys
from pathlib import Path
from demochecks.read import Error, THRESHOLDS, load_thresholds, parse_script
from demochecks.figures import Verdicts, counts, num
from demochecks.recording import check_recording
from demochecks.output import check_output, check_released
from demochecks.vms import check_vms
from demochecks.agentless import check_agentless


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
                       ("vms", "several VMs' demo output"),
                       ("agentless", "the guest from the host alone against its sideband")):
        sub.add_parser(name, help="check " + what).add_argument("outdir")
    cmd = sub.add_parser("counts", help="what a perf kvm script output holds")
    cmd.add_argument("file")
    cmd.add_argument("key", nargs="?")
    sub.add_parser("threshold", help="a bound of thresholds.conf").add_argument("name")
    cmd = sub.add_parser("released", help="a released perf's output of the vCPU thread's recording")
    cmd.add_argument("outdir")
    cmd.add_argument("file")
    args = parser.parse_args(argv)
    checks = {"recording": check_recording, "output": check_output, "vms": check_vms,
              "agentless": check_agentless}
    try:
        if args.command in checks:
            return run_check(checks[args.command], args.outdir)
        if args.command == "counts":
            return print_counts(args.file, args.key)
        if args.command == "released":
            v = Verdicts()
            check_released(v, Path(args.outdir), Path(args.file))
            return 1 if v.failed else 0
        return print_threshold(args.name)
    except (Error, OSError) as err:
        print("[checks] error: %s" % err, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
