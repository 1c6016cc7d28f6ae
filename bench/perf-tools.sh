#!/bin/bash
# 'make bench-perf': what the perf series cost people who never profile
# guests.  One host-only recording with call chains, read by the perf of
# the series' base (7.3 as released, scripts/build-perf.sh released) and by
# this series' perf built the same way (scripts/build-perf.sh bench: both
# without Python, whose -fPIC alone changes GCC's inlining), side by side:
# perf report --stdio and perf script, each round running the two in turn
# (the order alternating), and the CPU time (user + system) of each run.
# Prints the ratio series/base of each command's median with the spread of
# the per-round ratios, and, where valgrind is installed, the ratio of the
# instructions each command runs (callgrind, once each, with one copy of
# /proc/kallsyms for both): exact where CPU time is noisy.
#
#   bench/perf-tools.sh [-r ROUNDS] [-s SECONDS] [-o OUTDIR]
#
# The recording: perf record -g -a of 'perf bench sched messaging' for
# SECONDS (default 10) at 4000 Hz of cpu-clock, so that any host has it.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

rounds=7 seconds=10 outdir=$BUILD/bench-out/perf-tools
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift ;;
	-s) seconds=$2; shift ;;
	-o) outdir=$2; shift ;;
	*) die "usage: $0 [-r ROUNDS] [-s SECONDS] [-o OUTDIR]" ;;
	esac
	shift
done

series=$BUILD/perf-bench/perf
released=$BUILD/perf-released/perf
bash "$TOP/scripts/build-perf.sh" bench
[ -x "$released" ] || bash "$TOP/scripts/build-perf.sh" released
mkdir -p "$outdir"
data=$outdir/host.data
cp /proc/kallsyms "$outdir/kallsyms"

say "recording: perf record -g -a -e cpu-clock -F 4000, perf bench sched messaging, ${seconds}s"
"$series" record -q -g -a -e cpu-clock -F 4000 -o "$data" -- \
	timeout "$seconds" "$series" bench sched messaging -l 1000000 >/dev/null 2>&1 || true
[ -s "$data" ] || die "no recording at $data"
samples=$("$series" report -i "$data" --stats 2>/dev/null | awk '/SAMPLE events:/ { print $3; exit }')
say "$(du -h "$data" | cut -f1) recording, ${samples:-?} samples; $rounds rounds"

python3 - "$series" "$released" "$data" "$rounds" "$outdir" <<'EOF'
import os, resource, shutil, statistics, subprocess, sys

series, released, data, rounds, outdir = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
commands = {
    "perf report --stdio": ["report", "--stdio", "-i", data],
    "perf script": ["script", "-i", data],
}

def cpu_time(perf, args):
    """The CPU time, user and system, of one run of perf ARGS."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([perf] + args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)

lines = ["| command | base (s, median) | series (s, median) | series/base | per-round ratios, min-max |",
         "|---|---|---|---|---|"]
for name, args in commands.items():
    cpu_time(series, args)      # warm the page cache and the build-id lookups
    base, ours, ratios = [], [], []
    for i in range(rounds):
        pair = [(released, base), (series, ours)]
        if i % 2:
            pair.reverse()
        for perf, times in pair:
            times.append(cpu_time(perf, args))
        ratios.append(ours[-1] / base[-1])
    lines.append("| %s | %.3f | %.3f | %.3f | %.3f-%.3f |" % (
        name, statistics.median(base), statistics.median(ours),
        statistics.median(ours) / statistics.median(base), min(ratios), max(ratios)))

def instructions(perf, args):
    """The instructions one run of perf ARGS executes, counted by callgrind."""
    out = os.path.join(outdir, "callgrind.out")
    subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=" + out, perf] +
                   args + ["--kallsyms", os.path.join(outdir, "kallsyms")],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    with open(out) as f:
        for line in f:
            if line.startswith("totals:") or line.startswith("summary:"):
                return int(line.split()[1])
    raise SystemExit("no instruction count in " + out)

if shutil.which("valgrind"):
    lines += ["", "| command | base (instructions) | series (instructions) | series/base |",
              "|---|---|---|---|"]
    for name, args in commands.items():
        base, ours = instructions(released, args), instructions(series, args)
        lines.append("| %s | %d | %d | %.4f |" % (name, base, ours, ours / base))
else:
    lines += ["", "instructions: not counted (no valgrind here)"]
text = "\n".join(lines) + "\n"
print(text, end="")
with open(os.path.join(outdir, "results.md"), "w") as out:
    out.write(text)
EOF
say "results: $outdir/results.md"
