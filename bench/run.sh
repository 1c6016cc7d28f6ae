#!/bin/bash
# 'make bench': guest call-chain sampling in the kernel vs in the VMM,
# measured side by side inside L1.
#
#   bench/run.sh [--smoke | --ratios | --units] [-o OUTDIR]
#
# Builds the benchmark if needed (bench/build.sh), runs it inside L1
# (scripts/l1-run.sh), then turns its results.csv into results.md and
# overhead.png in OUTDIR (default $BUILD/bench-out) with bench/report.py, and
# prints the Markdown table.  Then it measures the ratios the series is
# judged by (a chain against the IP alone, one frame per page against a
# dense stack) with their spread, in a run of their own with more
# repetitions (OUTDIR/ratios), and then what the kernel's walks did per
# sample, counted by KVM's tracepoints in runs of their own (OUTDIR/units);
# last, what reading a guest's processes from the host costs the guest and
# the host (bench/agentless.sh, OUTDIR/agentless).
# --ratios runs only the ratios, --units only the counts; --smoke runs only
# the short sanity check (no sampling, in-kernel chains, userspace chains,
# one rate, ~1 s each), which fails on no work, no samples or a
# complete-chain share <= 0.9.  Extra arguments after -- go to the
# benchmark's main run (e.g. -- -r 3 -d 2).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

smoke=0 ratios_only=0 units_only=0 outdir=$BUILD/bench-out
while [ $# -gt 0 ]; do
	case $1 in
	--smoke) smoke=1 ;;
	--ratios) ratios_only=1 ;;
	--units) units_only=1 ;;
	-o) outdir=$2; shift ;;
	--) shift; break ;;
	*) die "usage: $0 [--smoke | --ratios | --units] [-o OUTDIR] [-- BENCH-ARGS...]" ;;
	esac
	shift
done

[ -f "$BZIMAGE" ] || die "no kernel at $BZIMAGE: run 'make build' first"
[ -f "$SELFTESTS/lib/kvm_util.o" ] || bash "$TOP/scripts/build-selftests.sh"
bash "$TOP/bench/build.sh"
bin=$BENCHBUILD/guest_callchain_bench
hostclock=$BENCHBUILD/host_clock
start=$(date +%s)
# Debian's python3, which python3-matplotlib is for (not a pyenv shim).
PYTHON=/usr/bin/python3
[ -x $PYTHON ] || PYTHON=python3

# Run $bin inside L1 as l1-run.sh NAME, with the host clock beside it
# (bench/host_clock.c): QEMU's vCPU thread's CPU time, to correct for the
# host descheduling QEMU (the host is shared).  l1-run.sh writes QEMU's PID
# to qemu.pid in the results directory; the host clock ends by itself when
# QEMU does.
run_in_l1() {
	local name=$1 timeout=$2 results=$OUT/l1/$1 l1pid qemu="" helper="" rc=0
	shift 2
	rm -f "$results/qemu.pid"
	bash "$TOP/scripts/l1-run.sh" -t "$timeout" -n "$name" "$bin" "$@" &
	l1pid=$!
	for _ in $(seq 100); do
		qemu=$(cat "$results/qemu.pid" 2>/dev/null) || true
		[ -n "$qemu" ] && break
		sleep 0.1
	done
	if [ -n "$qemu" ]; then
		"$hostclock" "$qemu" "$results" >"$BENCHBUILD/host-clock-$name.log" 2>&1 &
		helper=$!
	else
		say "warning: no QEMU PID from l1-run.sh: no host clock, L1 wall time only"
	fi
	wait $l1pid || rc=$?
	[ -z "$helper" ] || wait "$helper" || say "warning: host clock failed: $(cat "$BENCHBUILD/host-clock-$name.log")"
	return $rc
}

if [ $smoke -eq 1 ]; then
	rc=0
	run_in_l1 bench-smoke 180 --smoke "$@" || rc=$?
	say "smoke run: status $rc, $(($(date +%s) - start))s including the L1 boot"
	exit $rc
fi

$PYTHON -c 'import matplotlib' 2>/dev/null ||
	die "$PYTHON has no matplotlib: run 'make deps' (it installs python3-matplotlib)"

# Copy run $1's results from L1 to directory $2 and report them there.
report() {
	local l1=$OUT/l1/$1 dir=$2 f
	[ -s "$l1/results.csv" ] || die "no results in $l1"
	mkdir -p "$dir"
	for f in results.csv phases.csv hostclock.csv sync.csv units.csv; do
		[ ! -f "$l1/$f" ] || cp "$l1/$f" "$dir/$f"
	done
	cp "$l1/output.log" "$dir/bench.log"
	$PYTHON "$TOP/bench/report.py" "$dir/results.csv" "$dir"
}

if [ $ratios_only -eq 0 ] && [ $units_only -eq 0 ]; then
	# The default run: 5 repetitions of 51 runs of 2.2 s (+0.2 s warm-up):
	# about 12 minutes in L1.
	run_in_l1 bench 1080 "$@"
	report bench "$outdir"
	cat "$outdir/results.md"
fi

# The ratios, with enough repetitions, and runs long enough, that the 95%
# confidence interval of the median chain / IP is within about +-10%: the
# four configurations (the fourth, kernel-host, for the host part's cost)
# in turn in each of RATIO_REPS repetitions of RATIO_SECONDS each, about 15
# minutes in L1.  With make bench's 2.2 s runs
# and 21 repetitions it was +-20% (docs/measurements.md).
if [ $units_only -eq 0 ]; then
	run_in_l1 bench-ratios 2000 --only kernel-ip:64:1000 --only kernel-chain:64:1000 \
		--only kernel-chain:64:1000:sparse --only kernel-host:64:1000 \
		-r "${RATIO_REPS:-31}" -d "${RATIO_SECONDS:-6.6}"
	report bench-ratios "$outdir/ratios"
	awk '/^Ratios/ { p = 1 } /^Complete chains/ { p = 0 } p' "$outdir/ratios/results.md"
fi

# What the walks did, per sample, in units no emulator distorts: the same
# configurations (and the stack window's) once more, with KVM's tracepoints
# on, which cost time of their own.  A minute in L1.
if [ $ratios_only -eq 0 ]; then
	run_in_l1 bench-units 600 -U --only kernel-chain:8:1000 --only kernel-chain:64:1000 \
		--only kernel-chain:64:1000:sparse --only kernel-host:64:1000 \
		--only kernel-stack:64:1000 -r 1 -d 2.2
	report bench-units "$outdir/units"
	awk '/^Work of the kernel/ { p = 1 } p' "$outdir/units/results.md"
fi

# What profiling a guest from the host alone costs it and the host
# (perf kvm tasks -o at 10 Hz against none, alternating; a few minutes).
if [ $ratios_only -eq 0 ] && [ $units_only -eq 0 ]; then
	bash "$TOP/bench/agentless.sh" -o "$outdir/agentless"
fi
say "done in $(($(date +%s) - start))s; results in $outdir (results.md, overhead.png, results.csv, bench.log; ratios/, units/, agentless/)"
