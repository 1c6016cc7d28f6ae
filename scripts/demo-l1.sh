#!/bin/bash
# The part of 'make demo' that runs inside L1 (scripts/demo.sh starts it):
# boot the L2 guest (our kernel, a busybox initramfs, demo/workload.c) with
# KVM, turn guest call chains on, record it with 'perf kvm --guest record -g'
# and turn the recording into text, folded stacks and a flame graph.
#
#   demo-l1.sh OUTDIR RECORD_SECONDS
set -euo pipefail
. "$(dirname "$0")/lib.sh"

outdir=$1 record_seconds=$2
PERF=${PERF:-$BUILD/perf/perf}
knob=/sys/module/kvm/parameters/enable_guest_callchains
template=$BUILD/npm/node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
step() { printf '[demo/L1 %4ds] %s\n' "$SECONDS" "$*"; }

[ -e "$knob" ] || die "$knob is missing: L1 runs a kernel without guest call chains (not the patched kernel?)"
[ -c /dev/kvm ] || die "no /dev/kvm in L1: KVM (kvm_amd) did not come up"
touch "$outdir/.writable" 2>/dev/null || die "output directory $outdir is not writable"
rm -f "$outdir/.writable"

share=$outdir/guest
rm -rf "$share"
mkdir -p "$share"
echo Y >"$knob"
step "guest call chains on ($knob = $(cat "$knob"))"

# The guest runs its workload for longer than we record, so that recording
# starts and ends in the middle of it.
step "booting the L2 guest (Linux $(basename "$BUILD/bzImage"), busybox, workload)"
qemu-system-x86_64 -accel kvm -cpu host -m 512 -smp 1 \
	-display none -monitor none -nic none -no-reboot \
	-kernel "$BUILD/bzImage" -initrd "$BUILD/demo/initramfs.cpio.gz" \
	-append "console=ttyS0 loglevel=4 panic=-1 -- $((record_seconds + 30))" \
	-fsdev local,id=share,path="$share",security_model=none \
	-device virtio-9p-pci,fsdev=share,mount_tag=share \
	-serial file:"$outdir/guest-console.log" &
qemu=$!
for _ in $(seq 600); do
	[ -s "$share/workload.maps" ] && break
	kill -0 $qemu 2>/dev/null || die "the guest stopped early; see $outdir/guest-console.log"
	sleep 0.2
done
[ -s "$share/workload.maps" ] || die "the guest's workload did not start; see $outdir/guest-console.log"
step "guest workload running; symbols shared ($(wc -l <"$share/kallsyms") kallsyms lines)"

step "recording: perf kvm --guest record -g -e cpu-clock -p $qemu for ${record_seconds}s"
"$PERF" kvm --guest --guestkallsyms="$share/kallsyms" --guestmodules="$share/modules" \
	-o "$outdir/perf.data" record -q -g -e cpu-clock -F 2000 -p $qemu -- sleep "$record_seconds"
kill $qemu 2>/dev/null || true
wait $qemu 2>/dev/null || true

symbols=(--guestkallsyms="$share/kallsyms" --guestmodules="$share/modules")
step "symbolising: perf kvm --guest script"
"$PERF" kvm --guest "${symbols[@]}" -i "$outdir/perf.data" script >"$outdir/perf-kvm-script.txt" 2>"$outdir/perf-kvm-script.err"
step "folding stacks: perf kvm --guest script report stackcollapse"
"$PERF" kvm --guest "${symbols[@]}" -i "$outdir/perf.data" script report stackcollapse \
	>"$outdir/folded.txt" 2>>"$outdir/perf-kvm-script.err"
step "drawing: perf kvm --guest script report flamegraph"
(cd "$outdir" && "$PERF" kvm --guest "${symbols[@]}" -i "$outdir/perf.data" script report flamegraph \
	--template "$template" -o "$outdir/flamegraph.html" >>"$outdir/perf-kvm-script.err" 2>&1)
step "done"
