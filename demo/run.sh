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
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -le 1 ] || die "usage: $0 [OUTDIR]"
outdir=${1:-$BUILD/demo-out}
seconds=${DEMO_SECONDS:-20}
case "$seconds" in
'' | *[!0-9]*) die "DEMO_SECONDS must be a number of seconds, not '$seconds'" ;;
esac
[ "$seconds" -ge 1 ] && [ "$seconds" -le 600 ] || die "DEMO_SECONDS must be 1 to 600, not $seconds"
guest=${DEMO_GUEST:-stock}
case "$guest" in
stock | fp) ;;
*) die "DEMO_GUEST must be stock or fp, not '$guest'" ;;
esac
export DEMO_GUEST=$guest
mkdir -p "$outdir" 2>/dev/null && touch "$outdir/.writable" 2>/dev/null ||
	die "output directory $outdir is not writable"
rm -f "$outdir/.writable"
outdir=$(cd "$outdir" && pwd)
for f in "$BZIMAGE" "$PERF"; do
	[ -e "$f" ] || die "$f missing: run 'make demo' (it builds first) or 'make build'"
done

t0=$(date +%s)
stage demo/guest-image bash "$TOP/demo/guest-image.sh"

name=demo-$(printf '%s' "$outdir" | md5sum | cut -c1-8)
say "booting L1 (TCG); it starts the L2 guest with KVM and records it for ${seconds}s"
# One L1 CPU: the guest's vCPU is then never kicked out of the guest by
# IPIs from another L1 CPU, which TCG's nested SVM does not always survive.
# shellcheck disable=SC2016
L1_SMP=${L1_SMP:-1} stage demo/record bash "$TOP/scripts/l1-run.sh" -t 900 -n "$name" \
	sh -c 'DEMO_GUEST=$2 exec bash "$0" "$L1_RESULTS" "$1"' "$TOP/demo/in-l1.sh" "$seconds" "$guest" ||
	die "recording the guest in L1 failed: see the messages above and $OUT/l1/$name/console.log"

results=$OUT/l1/$name
rm -rf "$outdir/guest" "$outdir/guestmount" "$outdir/guest-data" "$outdir/guest-clock"
cp -a "$results/perf.data" "$results/guest" "$results/guestmount" "$results/guest-console.log" \
	"$results/demo-guest" "$results/guest-qemu.pid" "$outdir/"
if [ "$guest" = stock ]; then
	cp -a "$results/guest-data" "$results/guest-clock" "$outdir/"
fi
cp "$results/console.log" "$outdir/l1-console.log"
stage demo/report bash "$TOP/demo/report.sh" "$outdir"
say "done in $(($(date +%s) - t0))s; open $outdir/flamegraph.html in a browser"
