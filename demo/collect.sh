#!/bin/bash
# Gather what demo/in-l1.sh recorded in L1 into a demo's OUTDIR, the
# layout demo/report.sh and the checks read: the recording, the guest
# roots, each VM's files (under its name when there are several) and L1's
# kernel log.  demo/run.sh does this after its L1; make check's demo/short
# does it with the recording of its L1 suite's guest/record.
#
#   demo/collect.sh RESULTS L1_CONSOLE_LOG OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
[ $# -eq 3 ] || die "usage: $0 RESULTS L1_CONSOLE_LOG OUTDIR"
results=$1 console=$2 outdir=$3
[ -s "$results/vms" ] && [ -s "$results/perf.data" ] ||
	die "no recording in $results (no vms or perf.data): did demo/in-l1.sh run there?"
vms=$(grep -c . "$results/vms")
mkdir -p "$outdir"
rm -rf "$outdir/guest" "$outdir/guestmount" "$outdir/guest-data" "$outdir/guest-clock" "$outdir"/demo-*/ \
	"$outdir/agentless" \
	"$outdir"/*-vcpu*
cp -a "$results/perf.data" "$results/guestmount" "$results/vms" "$results/recording.txt" \
	"$results/perf-record.log" "$results/machines" "$outdir/"
[ ! -f "$results/host-kallsyms" ] || cp "$results/host-kallsyms" "$outdir/"
while read -r name kind _; do
	from=$results to=$outdir
	[ "$vms" -eq 1 ] || from=$results/$name to=$outdir/$name
	mkdir -p "$to"
	cp -a "$from/guest" "$from/guest-console.log" "$from/demo-guest" "$from/guest-qemu.pid" "$to/"
	[ "$kind" != stock ] || cp -a "$from/guest-data" "$from/guest-clock" "$to/"
	[ ! -d "$from/agentless" ] || cp -a "$from/agentless" "$to/"
done <"$results/vms"
cp "$console" "$outdir/l1-console.log"
