#!/bin/bash
# Inside L1 (bench/agentless.sh starts it): what reading a guest's
# processes from the host costs, the guest and the host.  The bare guest
# (demo/guest-image.sh: Debian's stock kernel and the demo's programs,
# nothing of perf's) booted with "bench": its workload runs a second at a
# time and prints each second's rounds on the console, the guest's own
# measure of its speed.  In each of ROUNDS rounds, a phase without reads
# and one with 'perf kvm tasks -o' reading the guest's processes and maps
# every INTERVAL ms (which first runs alternates), each phase the guest's
# next PHASE_SECONDS seconds after one that straddles the change; for the
# phases with reads, the CPU time perf kvm tasks took and its reads.
# Writes RESULTS/agentless.csv: round, mode, the guest's rounds of each
# second (space-separated), and perf kvm tasks' reads and CPU ms from its
# first read on (its start, the image's kallsyms and BTF parsed, left out).
#
#   bench/agentless-l1.sh RESULTS [ROUNDS [PHASE_SECONDS [INTERVAL]]]
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -ge 1 ] || die "usage: $0 RESULTS [ROUNDS [PHASE_SECONDS [INTERVAL]]]"
results=$1 rounds=${2:-5} phase=${3:-4} interval=${4:-100}
step() { printf '[bench/agentless %4ds] %s\n' "$SECONDS" "$*"; }
# demo/l1-guests.sh's settings: one VM, the bare guest, not opted in.
names=(bench-bare) kinds=(bare) levels=(0) vcpus=(1) optins=(none)
vms=1 work=/tmp/bench-agentless record_seconds=3600 boot_seconds=${DEMO_BOOT_SECONDS:-300}
export DEMO_GUEST_APPEND=bench
. "$TOP/demo/l1-guests.sh"
trap stop_guests EXIT
[ -s "$DEMOBUILD/bare/initramfs.cpio.gz" ] || die "no bare guest image: run DEMO_GUEST=bare demo/guest-image.sh"
[ -c /dev/kvm ] || die "no /dev/kvm in L1"
rm -rf "$work" && mkdir -p "$work"
failure=""
boot_and_wait 0 || die "the bare guest did not boot: $failure"
console=$work/guest-console.log
qmp_sock=/run/bench-bare.qmp.sock

# The guest's next N seconds' rounds, after the one under way.
next_seconds() {
	local n=$1 have want
	have=$(grep -c '^workload: [0-9]* rounds' "$console" || true)
	want=$((have + 1 + n))
	while [ "$(grep -c '^workload: [0-9]* rounds' "$console" || true)" -lt "$want" ]; do
		kill -0 "${qemus[0]}" 2>/dev/null || die "the guest ended: see $console"
		sleep 0.2
	done
	grep '^workload: [0-9]* rounds' "$console" | sed -n "$((have + 2)),$((want))p" |
		awk '{ printf "%s%s", sep, $2; sep = " " }'
}

echo "round,mode,rounds,cpu_ms,reads" >"$results/agentless.csv"
for round in $(seq "$rounds"); do
	modes="none reads"
	[ $((round % 2)) -eq 1 ] || modes="reads none"
	for mode in $modes; do
		if [ "$mode" = none ]; then
			got=$(next_seconds "$phase")
			echo "$round,none,$got,0,0" >>"$results/agentless.csv"
			step "round $round without reads: $got rounds a second"
			continue
		fi
		rm -f "$work/guest.data"
		"$PERF" kvm tasks --image="$STOCK_KERNEL/vmlinuz" --qmp="$qmp_sock" \
			-o "$work/guest.data" --interval="$interval" 2>"$work/tasks.log" &
		tasks=$!
		# The phase starts once it reads (its start takes seconds in L1):
		# the file is written at its first read.
		while [ ! -s "$work/guest.data" ]; do
			kill -0 "$tasks" 2>/dev/null || die "perf kvm tasks failed: $(tail -n 3 "$work/tasks.log")"
			sleep 0.2
		done
		# Its CPU time (user and system, clock ticks) from its first read
		# to its end: its reads'.
		ticks=$(awk '{ print $14 + $15 }' "/proc/$tasks/stat")
		got=$(next_seconds "$phase")
		ticks=$(($(awk '{ print $14 + $15 }' "/proc/$tasks/stat") - ticks))
		kill -INT "$tasks"
		wait "$tasks" || die "perf kvm tasks failed: $(tail -n 3 "$work/tasks.log")"
		reads=$(sed -n 's/^perf kvm tasks: \([0-9]*\) reads.*/\1/p' "$work/tasks.log")
		ms=$((ticks * 1000 / $(getconf CLK_TCK)))
		echo "$round,reads,$got,$ms,${reads:-0}" >>"$results/agentless.csv"
		step "round $round with reads every ${interval} ms: $got rounds a second; perf kvm tasks: ${reads:-?} reads, ${ms} ms of CPU from its first"
	done
done
