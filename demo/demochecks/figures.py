"""Figures of samples, and the verdicts the checks print."""
import sys
from demochecks.read import EXIT_TO_USER, KERNEL_ENTRY, UNKNOWN_THREAD, USER_ENTRY, beyond_ip


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
    """Every kernel frame resolved, the outermost one an entry point: one
    of KERNEL_ENTRY, or one of USER_ENTRY with user frames after it; or
    the sample is on the way back to user mode (EXIT_TO_USER)."""
    kernel = [frame for frame in sample.frames if is_kernel(frame)]
    if not kernel or any(frame.sym == "[unknown]" for frame in kernel):
        return False
    outermost = kernel[-1].sym
    return (KERNEL_ENTRY.fullmatch(outermost) is not None
            or EXIT_TO_USER.fullmatch(outermost) is not None
            or (USER_ENTRY.fullmatch(outermost) is not None
                and not is_kernel(sample.frames[-1])))


def counts(samples):
    """What a perf kvm script output holds, by name (demo/soak.sh and
    tests/demo/bad-use-test.sh read these too)."""
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
