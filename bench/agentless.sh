#!/bin/bash
# 'make bench-agentless' (and make bench's last part): what profiling a
# guest from the host alone costs.  Inside L1 (bench/agentless-l1.sh), the
# bare guest's own speed, measured inside it (its workload's rounds a
# second), with and without 'perf kvm tasks -o' reading its processes and
# maps from the host every INTERVAL ms, phases alternating, side by side
# in one run; and the host CPU time a read takes.  Prints the ratio of the
# guest's speed with reads to without (median of the rounds' ratios, with
# their range) and the host's cost per read and per second of reading.
#
#   bench/agentless.sh [-r ROUNDS] [-s PHASE_SECONDS] [-i INTERVAL_MS] [-o OUTDIR]
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

rounds=7 phase=4 interval=100 outdir=$BUILD/bench-out/agentless
while [ $# -gt 0 ]; do
	case $1 in
	-r) rounds=$2; shift ;;
	-s) phase=$2; shift ;;
	-i) interval=$2; shift ;;
	-o) outdir=$2; shift ;;
	*) die "usage: $0 [-r ROUNDS] [-s PHASE_SECONDS] [-i INTERVAL_MS] [-o OUTDIR]" ;;
	esac
	shift
done
for v in "$rounds" "$phase" "$interval"; do
	case $v in '' | *[!0-9]* | 0) die "-r, -s and -i take whole numbers above 0" ;; esac
done
[ -f "$BZIMAGE" ] || die "no kernel at $BZIMAGE: run 'make build' first"
[ -x "$PERF" ] || die "no perf at $PERF: run 'make perf'"
[ -s "$STOCK_KERNEL/vmlinuz" ] || bash "$TOP/demo/stock-kernel.sh"
DEMO_GUEST=bare bash "$TOP/demo/guest-image.sh"
mkdir -p "$outdir"
say "in L1: the bare guest, $rounds rounds of ${phase}s without and with perf kvm tasks -o every ${interval} ms"
# shellcheck disable=SC2016
bash "$TOP/scripts/l1-run.sh" -t $((600 + rounds * phase * 8)) -n bench-agentless \
	sh -c 'exec bash "$0" "$L1_RESULTS" "$@"' "$TOP/bench/agentless-l1.sh" "$rounds" "$phase" "$interval"
cp "$OUT/l1/bench-agentless/agentless.csv" "$outdir/"
python3 - "$outdir/agentless.csv" "$interval" <<'PY' | tee "$outdir/results.md"
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
interval = int(sys.argv[2])
speed = {}
for r in rows:
    speed.setdefault(r["round"], {})[r["mode"]] = statistics.mean(map(int, r["rounds"].split()))
ratios = [s["reads"] / s["none"] for s in speed.values() if "reads" in s and s.get("none")]
if not ratios:
    sys.exit("no round has both phases")
reads = [r for r in rows if r["mode"] == "reads"]
ms = sum(int(r["cpu_ms"]) for r in reads)
n = sum(int(r["reads"]) for r in reads)
print("# Profiling a guest from the host alone: what perf kvm tasks -o costs")
print()
print("| | |")
print("| --- | --- |")
print("| the guest's speed with reads every %d ms / without (its own rounds a second, %d rounds) | %.3f (%.3f to %.3f) |"
      % (interval, len(ratios), statistics.median(ratios), min(ratios), max(ratios)))
print("| without reads, rounds a second (median) | %.0f |" % statistics.median(s["none"] for s in speed.values() if "none" in s))
print("| host CPU per read (from the first read on) | %s |" % ("%.2f ms" % (ms / n) if n > 0 else "n/a"))
print("| host CPU per second of reading every %d ms | %s |" % (interval, "%.1f%% of a CPU" % (100 * ms / n * 1000 / interval / 1000) if n > 0 else "n/a"))
PY
say "results in $outdir (results.md, agentless.csv)"
