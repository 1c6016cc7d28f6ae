#!/bin/bash
# 'make demo': profile a real Linux guest from the host and draw its flame
# graph.  make builds first; this runs the rest:
#   guest image (demo/guest-image.sh) -> L1 (our kernel under TCG) boots the
#   L2 guest with KVM and records it with 'perf kvm --guest record -g'
#   (demo/in-l1.sh) -> symbolise and draw (demo/report.sh)
#
#   demo/run.sh [OUTDIR]     (default build/demo-out)
#   DEMO_SECONDS=N       how long to record (default 20)
#   DEMO_GUEST=stock     Debian's stock cloud kernel and a program without
#                        frame pointers, recorded with --call-graph dwarf
#                        (the default)
#   DEMO_GUEST=fp        our frame-pointer kernel and program, recorded -g
#   DEMO_GUESTS=3        three VMs at once, each in its own cgroup: the stock
#                        guest at opt-in level 2, the fp guest at level 1,
#                        a stock guest not opted in; one recording of the
#                        whole host (perf record -a), an event per VM's
#                        cgroup with that VM's call-graph mode, each stock
#                        guest's sideband injected; the flame graph split
#                        by VM.  DEMO_GUESTS=2: the stock guest and the one
#                        not opted in.  (default 1: DEMO_GUEST alone)
#   DEMO_AGENTLESS=1     the stock guest with nothing added to it (no perf,
#                        no clock tool), profiled from the host alone: its
#                        kernel's symbols and its processes read in guest
#                        memory (perf kvm kallsyms, perf kvm tasks -o), its
#                        files from its image; DEMO_AGENTLESS=both: the
#                        stock guest's own sideband and the host's reads on
#                        the same recording, the flame graph from the
#                        guest's, and the two compared sample by sample
#                        (tests/demo/agentless-test.sh, as make check
#                        does).  (default 0: the guest's own sideband)
#   DEMO_RATE=N          samples a second (default 250)
#   DEMO_MAX_LOST_PERCENT=P  a recording that lost more than P% (default 1)
#                        of its samples, or any event of the guest's
#                        sideband, is made again (at half the rate after
#                        lost samples), up to DEMO_ATTEMPTS times (3)
#   DEMO_BOOT_SECONDS=N  how long the guest may take to boot (default 300)
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -le 1 ] || die "usage: $0 [OUTDIR]"
outdir=${1:-$BUILD/demo-out}
# whole NAME VALUE MIN MAX: VALUE is a whole number from MIN to MAX.
whole() {
	case "$2" in
	'' | *[!0-9]*) die "$1 must be a whole number from $3 to $4, not '$2'" ;;
	esac
	[ "$2" -ge "$3" ] && [ "$2" -le "$4" ] || die "$1 must be a whole number from $3 to $4, not $2"
}
seconds=${DEMO_SECONDS:-20}
whole DEMO_SECONDS "$seconds" 1 600
attempts=${DEMO_ATTEMPTS:-3}
whole DEMO_ATTEMPTS "$attempts" 1 9
whole DEMO_RATE "${DEMO_RATE:-250}" 10 4000
whole DEMO_BOOT_SECONDS "${DEMO_BOOT_SECONDS:-300}" 30 3600
whole DEMO_MAX_LOST_PERCENT "${DEMO_MAX_LOST_PERCENT:-1}" 0 100
guest=${DEMO_GUEST:-stock}
case "$guest" in
stock | fp) ;;
*) die "DEMO_GUEST must be stock or fp, not '$guest'" ;;
esac
export DEMO_GUEST=$guest
vms=${DEMO_GUESTS:-1}
whole DEMO_GUESTS "$vms" 1 3
agentless=${DEMO_AGENTLESS:-0}
case "$agentless" in
0 | both) ;;
1) [ "$guest" = stock ] && [ "$vms" -eq 1 ] ||
	die "DEMO_AGENTLESS=1 profiles the stock guest alone (DEMO_GUEST=stock, DEMO_GUESTS=1)" ;;
*) die "DEMO_AGENTLESS must be 0, 1 or both, not '$agentless'" ;;
esac
mkdir -p "$outdir" 2>/dev/null && touch "$outdir/.writable" 2>/dev/null ||
	die "output directory $outdir is not writable"
rm -f "$outdir/.writable"
outdir=$(cd "$outdir" && pwd)
for f in "$BZIMAGE" "$PERF"; do
	[ -e "$f" ] || die "$f missing: run 'make demo' (it builds first) or 'make build'"
done

t0=$(date +%s)
if [ "$agentless" = 1 ]; then
	DEMO_GUEST=bare stage demo/guest-image bash "$TOP/demo/guest-image.sh"
elif [ "$vms" -eq 1 ]; then
	stage demo/guest-image bash "$TOP/demo/guest-image.sh"
else
	for g in stock fp; do
		DEMO_GUEST=$g stage demo/guest-image-$g bash "$TOP/demo/guest-image.sh"
	done
fi

name=demo-$(printf '%s' "$outdir" | md5sum | cut -c1-8)
results=$OUT/l1/$name
# Time limits that fit a slow machine: each attempt (demo/in-l1.sh) may
# take, for each VM, its guest's boot (DEMO_BOOT_SECONDS, 300; the VMs
# boot one at a time), perf's and the clock tools' start (120: perf reads
# each guest's kallsyms, tens of seconds under TCG) and the fetch of its
# data (180); then the recording and its margin (120).  L1's own boot on
# top.  Within these demo/in-l1.sh says what went wrong; past them L1 is
# stopped and only its logs say.
per_vm=$((${DEMO_BOOT_SECONDS:-300} + 120 + 180))
limit=$((120 + attempts * (vms * per_vm + seconds + 120 + 30)))
say "booting L1 (TCG); it starts the L2 guest with KVM and records it for ${seconds}s (at most ${limit}s in all)"
# One L1 CPU: the guest's vCPU is then never kicked out of the guest by
# IPIs from another L1 CPU, which TCG's nested SVM does not always survive.
# L1 has none of our environment: the settings go on its command line.
# shellcheck disable=SC2016
L1_SMP=${L1_SMP:-1} stage demo/record bash "$TOP/scripts/l1-run.sh" -t "$limit" -n "$name" \
	sh -c 'seconds=$1; shift; exec env "$@" "$L1_RESULTS" "$seconds"' sh "$seconds" \
	DEMO_GUEST="$guest" DEMO_GUESTS="$vms" DEMO_ATTEMPTS="$attempts" DEMO_RATE="${DEMO_RATE:-250}" \
	DEMO_AGENTLESS="$agentless" \
	DEMO_MAX_LOST_PERCENT="${DEMO_MAX_LOST_PERCENT:-1}" DEMO_BOOT_SECONDS="${DEMO_BOOT_SECONDS:-300}" \
	DEMO_SHOWN_OUTDIR="$results" bash "$TOP/demo/in-l1.sh" ||
	die "stage demo/record failed: see the messages above, $results/output.log (what ran in L1), $results/guest-console.log (the guest) and $results/console.log (L1's kernel)"
bash "$TOP/demo/collect.sh" "$results" "$results/console.log" "$outdir"
stage demo/report bash "$TOP/demo/report.sh" "$outdir" ||
	die "stage demo/report failed: see the messages above and the logs in $outdir (perf-inject.log, perf-kvm-script.err, render.log)"
if [ "$agentless" = both ]; then
	stage demo/agentless bash "$TOP/tests/demo/agentless-test.sh" "$outdir" ||
		die "stage demo/agentless failed: the host's reads did not give what the guest's sideband did (above; files in $outdir/agentless)"
fi
say "done in $(($(date +%s) - t0))s; open $outdir/flamegraph.html in a browser"
