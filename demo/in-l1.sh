#!/bin/bash
# The part of 'make demo' that runs inside L1 (demo/run.sh starts it): boot
# the L2 guests with KVM, turn guest call chains on and record the guests
# for RECORD_SECONDS.  The guests (demo/guest-image.sh):
#   stock  Debian's stock cloud kernel, three programs without frame
#          pointers: the VM at opt-in level 2, recorded with --call-graph
#          dwarf, which unwinds offline (ORC, DWARF CFI); the guest's own
#          perf records its sideband (its processes, their mappings, its
#          context switches) at the same time, with the same clock (-k
#          CLOCK_MONOTONIC), and tools/guest-clock measures how the two
#          clocks relate
#   fp     our frame-pointer kernel and program: level 1, recorded -g
#   bare   (DEMO_AGENTLESS=1) the stock guest's kernel and programs and
#          nothing else, level 2, --call-graph dwarf: profiled from the
#          host alone
# DEMO_AGENTLESS=both (the stock guest) or 1 (the bare guest) adds the
# host's own reads of the guest (demo/l1-record.sh's agentless_root and
# agentless_wrap): its kernel's symbols from the image and guest memory
# (perf kvm kallsyms) and, around the recording, recorded with
# --guest-pgd, its processes and maps every DEMO_AGENTLESS_INTERVAL ms
# (100) from guest memory (perf kvm tasks -o), in OUTDIR/agentless.
#
# DEMO_GUESTS=1 (the default) runs DEMO_GUEST alone and records its QEMU
# (perf record -p), the host's side of it too (perf kvm --host --guest):
# QEMU's host samples, and the host call chain of the vCPU thread in its
# guest samples.  DEMO_GUESTS=2 or 3 runs several VMs at once, each in
# a cgroup of its own as libvirt runs them, and records the whole host
# (perf record -a) with one event per VM's cgroup, each with the call-graph
# mode its VM opted in for:
#   demo-stock  the stock guest at level 2 (--call-graph dwarf),
#               switched on by QMP's set-guest-callchains once it runs
#   demo-fp     the fp guest at level 1 (-g), opted in from its start
#               by QEMU's -accel kvm,guest-callchains          (3 only)
#   demo-off    the stock guest, not opted in: its samples get the
#               guest's instruction pointer and nothing of its memory;
#               its sideband is recorded as demo-stock's is
# The one VM of DEMO_GUESTS=1 is switched on by set-guest-callchains once
# it runs its programs too (demo/l1-record.sh says why the stock guests
# are).  The guests run under the guests' QEMU, with patches/qemu
# (scripts/guest-qemu.sh).
#
#   demo/in-l1.sh OUTDIR RECORD_SECONDS
#
# Everything is written to L1's own memory (WORK, a tmpfs) and copied to
# OUTDIR, L1's 9p share of the host, at the end, whether or not it worked:
# under nested TCG on a busy host, perf writing its ring to 9p fell so far
# behind that it lost most of its samples.
#
# OUTDIR gets perf.data, recording.txt (what the recording holds and lost,
# demo/check-output.sh reads it), perf-record.log, machines (perf kvm's
# --host --guest or --guest, what was recorded), host-kallsyms (L1's, with
# the host's side), vms (a line per VM:
# NAME GUEST LEVEL QEMU-PID VCPUS) and guestmount/QEMU-PID, a link to each VM's
# guest root.  Each VM's files are in OUTDIR itself with one VM, else in
# OUTDIR/NAME: guest-console.log, guest-qemu.pid, demo-guest, and guest/,
# the guest's root (proc/kallsyms, proc/modules, sys/kernel/notes; for
# fp, the program and workload.maps, its /proc/PID/maps in the guest); for
# stock, guest-data/ (the guest's perf.data, tmp/guest.data, and its
# build-id cache, root/.debug) and guest-clock (OFFSET,SCALE for perf
# inject).
#
# A recording that lost more than MAX_LOST_PERCENT (demo/thresholds.conf,
# 1; DEMO_MAX_LOST_PERCENT overrides it) of its samples,
# or any event of the guest's sideband, is not drawn: the guests are booted
# and recorded again, at half the rate after lost samples, up to
# DEMO_ATTEMPTS (3) times.  DEMO_RATE (250) is the first attempt's rate.
#
# The guests' part is demo/l1-guests.sh, the recording's demo/l1-record.sh
# (sourced below, after the settings); this file has the settings, the
# attempts and what goes to OUTDIR.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 2 ] || die "usage: $0 OUTDIR RECORD_SECONDS"
outdir=$1 record_seconds=$2
knob=${DEMO_KNOB:-/sys/module/kvm/parameters/enable_guest_callchains}
guest=${DEMO_GUEST:-stock}
rate=${DEMO_RATE:-250}
max_lost=$(python3 "$TOP/demo/checks.py" threshold MAX_LOST_PERCENT)	# demo/thresholds.conf, or DEMO_MAX_LOST_PERCENT
boot_seconds=${DEMO_BOOT_SECONDS:-300}
agentless_mode=${DEMO_AGENTLESS:-0}
agentless_interval=${DEMO_AGENTLESS_INTERVAL:-100}
case "$agentless_mode" in
0 | both) ;;
1)
	[ "$guest" = stock ] && [ "${DEMO_GUESTS:-1}" = 1 ] ||
		die "DEMO_AGENTLESS=1 profiles the stock guest alone (DEMO_GUEST=stock, DEMO_GUESTS=1)"
	guest=bare
	;;
*) die "DEMO_AGENTLESS must be 0, 1 or both, not '$agentless_mode'" ;;
esac
case "$agentless_interval" in
'' | *[!0-9]* | 0) die "DEMO_AGENTLESS_INTERVAL must be a number of milliseconds, not '$agentless_interval'" ;;
esac
step() { printf '[demo/L1 %4ds] %s\n' "$SECONDS" "$*"; }
# Where OUTDIR is on the host, for messages (demo/run.sh says).
shown=${DEMO_SHOWN_OUTDIR:-$outdir}
work=${DEMO_WORK:-/tmp/demo-l1}

case "$guest" in
stock | bare) level=2 ;;
fp) level=1 ;;
*) die "DEMO_GUEST must be stock or fp, not '$guest'" ;;
esac
case "${DEMO_GUESTS:-1}" in
1) names=("demo-$guest") kinds=("$guest") levels=("$level") vcpus=(1) optins=(qmp) ;;
2) names=(demo-stock demo-off) kinds=(stock stock) levels=(2 0) vcpus=(2 1) optins=(qmp none) ;;
3) names=(demo-stock demo-fp demo-off) kinds=(stock fp stock) levels=(2 1 0) vcpus=(2 1 1) optins=(qmp property none) ;;
*) die "DEMO_GUESTS must be 1, 2 or 3, not '${DEMO_GUESTS:-}'" ;;
esac
vms=${#names[@]}
case "$rate" in
'' | *[!0-9]*) die "DEMO_RATE must be a number of samples a second, not '$rate'" ;;
esac
[ -e "$knob" ] || die "$knob is missing: this kernel has no guest call chains (not the patched kernel?)"
[ -c /dev/kvm ] || die "no /dev/kvm here: KVM is not available (no SVM/VMX for the guest?)"
for kind in "${kinds[@]}"; do
	[ "$kind" = fp ] || [ -s "$STOCK_KERNEL/vmlinuz" ] ||
		die "no guest kernel at $STOCK_KERNEL/vmlinuz: run demo/deps.sh"
done
# Each VM of several runs in its cgroup, as libvirt runs VMs; the
# recording's events each count in one of them (perf record -G).
cgroups=/sys/fs/cgroup
[ "$vms" -eq 1 ] || [ -e "$cgroups/cgroup.procs" ] ||
	die "no cgroup file system at $cgroups (a kernel without CONFIG_CGROUPS?): several VMs are recorded per cgroup"

. "$TOP/demo/l1-guests.sh"
. "$TOP/demo/l1-record.sh"

# Whatever happened, what there is goes to OUTDIR.
copy_out() {
	stop_guests
	[ -d "$work" ] || return 0
	cp -a "$work/." "$outdir/" 2>/dev/null ||
		step "could not copy $work to $shown"
}
trap copy_out EXIT

# The guest kernel sometimes goes wrong early, with interrupts taken while
# it has them off, under nested KVM on TCG's SVM (see README); a recording
# that lost samples on a busy machine is made again at half the rate.
attempts=${DEMO_ATTEMPTS:-3}
for attempt in $(seq "$attempts"); do
	failure="" lost_samples=0
	if record_guests "$rate"; then
		echo "attempts $attempt" >>"$work/recording.txt"
		break
	fi
	stop_guests
	for f in perf-record.log recording.txt; do
		[ -f "$work/$f" ] && cp "$work/$f" "$outdir/${f%.*}.failed-$attempt.${f##*.}"
	done
	for i in "${!names[@]}"; do
		f=$(vm_dir "$i")/guest-console.log to=guest-console
		[ "$vms" -eq 1 ] || to=$to-${names[$i]}
		[ -f "$f" ] && cp "$f" "$outdir/$to.failed-$attempt.log"
	done
	[ "$attempt" -lt "$attempts" ] ||
		die "no good recording in $attempts attempts; the last: $failure (logs in $shown: guest-console*.failed-$attempt.log, perf-record.failed-$attempt.log)"
	if [ "$lost_samples" = 1 ] && [ "$rate" -gt 50 ]; then
		rate=$((rate / 2))
	fi
	step "trying again ($((attempt + 1)) of $attempts) at $rate samples a second"
done
step "recorded $(du -h "$work/perf.data" | cut -f1) of perf.data: $(tr '\n' ' ' <"$work/recording.txt")"
