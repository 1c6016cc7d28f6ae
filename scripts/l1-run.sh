#!/bin/bash
# Run one command inside L1 and return its exit status and output.
#
#   scripts/l1-run.sh [-t SECONDS] [-n NAME] COMMAND [ARG...]
#
# L1 is our kernel ($BZIMAGE) under QEMU TCG (-cpu max emulates AMD SVM
# with nested paging, so L1 has a working /dev/kvm), or under KVM with
# -cpu host where this host has nested VMX or SVM (lib.sh's l1_accel, said
# at the start, in $OUT/l1/NAME/accel): $L1_QEMU, the QEMU
# scripts/qemu.sh unpacks (config/base.conf pins it).  Its root is this
# machine's root, read-only over 9p, so the command, our builds, qemu and perf
# are all at the same paths inside.  The command runs in the current directory
# with $L1_RESULTS pointing at a writable directory, which is
# $OUT/l1/NAME on the host.  Its output streams here as it runs; QEMU writes
# its PID to $OUT/l1/NAME/qemu.pid while it runs (the bench watches its CPU
# time).
#
# L1_APPEND adds to the L1 kernel command line; L1_SMP replaces -smp 2,
# L1_MEM -m 6G; L1_ACCEL=tcg|kvm chooses the accelerator.
#
# An L1 that runs out of time says where it was: a minute before, what the
# command's tasks wait on (hang.txt, written in L1); 20 s before, where
# each L1 CPU is, three times (cpus.txt, from QEMU's monitor: L1's kernel,
# its user space or a guest).  QEMU 7.2's TCG could get stuck running a
# guest with L1's own timer interrupt pending, and L1 with it (L1 now runs
# on a later QEMU; the watch stays, for any QEMU): the same CPU with its
# timer at the same count for 60 s (stuck_watch), L1 is stopped and booted
# once more, saying so, the first boot's logs in stuck-1/; stuck again,
# the status is 126.  The second boot is a result: "RETRY l1/NAME # why"
# goes to $L1_RETRIES when set (make check counts them: more than one a
# run fails it).
#
# Afterwards the L1 kernel log (console.log there) is checked: any WARNING,
# BUG, Oops, lockdep, RCU or KASAN report fails the run, with the report shown.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

run_options 1200 "$@"
kernel=${L1_KERNEL:-$BZIMAGE}
[ -f "$kernel" ] || die "no kernel at $kernel: run 'make build' first"
[ -x "$L1_QEMU" ] || die "no QEMU for L1 at $L1_QEMU: run 'make deps' (scripts/qemu.sh)"

results=$OUT/l1/$name
rm -rf "$results"
mkdir -p "$results"
command_script "$PWD" >"$results/cmd"
: >"$results/output.log"

# L1's TSC is this machine's (TCG reads it).  L1 calibrates it against the
# PIT, and on a busy machine that fails and the HPET fallback can be off by
# more than KVM's 250 ppm tolerance: QEMU in L1 then asks KVM for the TSC
# rate L1 refined later, which KVM can't give without TSC scaling ("user
# requested TSC rate below hardware speed"), and the L2 guest's timers
# stall (soft lockups, a guest that never gets to its programs).  Give
# L1 this machine's TSC rate.
# A minute before the time is up (a quarter of it, if less than 240s),
# L1 writes what its tasks wait on to hang.txt (scripts/l1-init.sh).
margin=$((timeout < 240 ? timeout / 4 : 60))
deadline=
[ "$timeout" -lt 60 ] || deadline="l1.deadline=$((timeout - margin))"
tsc_append=
tsc_khz=$(host_tsc_khz)
[ -z "$tsc_khz" ] || tsc_append="tsc_early_khz=$tsc_khz"

# TCG, or KVM where the host has nested virtualization (lib.sh's l1_accel).
accel=$(l1_accel) || exit 1
accel_why=${accel#*$'\t'} accel=${accel%%$'\t'*}
case $accel in
kvm) accel_args=(-accel kvm -cpu host,pmu=on) ;;
*) accel_args=(-accel tcg,thread=single -cpu max) ;;
esac
say "L1 under ${accel^^}: $accel_why"
echo "$accel" >"$results/accel"

# QEMU's monitor socket (a Unix socket path has at most 107 bytes).
monitor=$results/monitor.sock
[ ${#monitor} -lt 100 ] || monitor=$(mktemp -u /tmp/l1-monitor.XXXXXX)
system_map=
[ "$kernel" != "$BZIMAGE" ] || [ ! -f "$KBUILD/System.map" ] || system_map=$KBUILD/System.map

# stuck_watch: every 30 s, which CPUs QEMU runs outside L1's kernel with
# L1's own timer interrupt pending (scripts/qemu-monitor.py stuck), each
# with the count L1 last armed its timer with.  The same CPU, with the same
# count, three times in a row (60 s: a CPU that takes its timer interrupt
# arms the timer anew at each tick) is QEMU's TCG stuck in the guest
# (docs/measurements.md): say where, mark it and stop QEMU.  A CPU merely
# seen with its tick pending (round-robin TCG runs one CPU at a time, and a
# slow host makes the others wait) arms another count and is not stuck.
# Never for a CPU in L1's kernel: that would be a lockup of ours, for the
# log check and the time limit to report, not to boot again over.
# (L1_STUCK_PROBE, L1_STUCK_POLL: another probe and poll interval, for
# tests/harness/l1-stuck-test.sh.)
stuck_watch() {
	local times=0 now kept same= probe=${L1_STUCK_PROBE:-$TOP/scripts/qemu-monitor.py}
	[ -n "$system_map" ] || return 0
	while sleep "${L1_STUCK_POLL:-30}"; do
		if "$probe" stuck "$monitor" "$system_map" >"$results/stuck.now" 2>&1; then
			# CPU N and its timer's count, the rest of the line left out.
			now=$(sed -n 's/^\(CPU [0-9]*\):.*pending\(; timer armed with [0-9?]*\)\{0,1\}$/\1\2/p' "$results/stuck.now" | sort)
			kept=
			[ "$times" -eq 0 ] || kept=$(comm -12 <(printf '%s\n' "$same") <(printf '%s\n' "$now"))
			if [ -n "$kept" ]; then
				same=$kept times=$((times + 1))
			else
				# None seen before as it is now: this poll starts again.
				same=$now times=1
			fi
			[ -n "$same" ] || times=0
		else
			times=0
		fi
		[ $times -ge 3 ] || continue
		mv "$results/stuck.now" "$results/stuck"
		python3 "$TOP/scripts/qemu-monitor.py" where "$monitor" "$system_map" >"$results/cpus.txt" 2>&1
		kill "$(cat "$results/qemu.pid")" 2>/dev/null
		return 0
	done
}

# boot_l1: run the command in L1 once; qemu_rc is QEMU's exit status.
boot_l1() {
	local tailer watcher=
	rm -f "$results/stuck" "$results/stuck.now"
	say "booting L1 for '${command[*]}' (log: $results/console.log)"
	start=$(date +%s)
	qemu_rc=0
	timeout --foreground -k 10 "$timeout" "$L1_QEMU" -L "$L1_QEMU_DATA/qemu" -L "$L1_QEMU_DATA/seabios" \
		"${accel_args[@]}" -smp "${L1_SMP:-2}" -m "${L1_MEM:-6G}" -nodefaults \
		-display none -monitor unix:"$monitor",server=on,wait=off -nic none -no-reboot \
		-kernel "$kernel" \
		-append "console=ttyS0 loglevel=7 log_buf_len=8M panic=-1 root=hostroot rootfstype=9p rootflags=trans=virtio,version=9p2000.L,msize=512000,cache=loose ro init=$TOP/scripts/l1-init.sh rcupdate.rcu_cpu_stall_timeout=60 $tsc_append $deadline ${L1_APPEND:-}" \
		-fsdev local,id=hostroot,path=/,security_model=none,readonly=on,multidevs=remap \
		-device virtio-9p-pci,fsdev=hostroot,mount_tag=hostroot \
		-fsdev local,id=results,path="$results",security_model=none,multidevs=remap \
		-device virtio-9p-pci,fsdev=results,mount_tag=results \
		-serial file:"$results/console.log" -serial file:"$results/output.log" \
		-pidfile "$results/qemu.pid" &
	qemu=$!
	tail -n +1 -f --pid=$qemu "$results/output.log" | tr -d '\r' &
	tailer=$!
	stuck_watch &
	local stuck_watcher=$!
	if [ "$timeout" -ge 60 ]; then
		(sleep $((timeout - 20)) && for sample in 1 2 3; do
			echo "== $((timeout - 20 + (sample - 1) * 4))s after L1 started"
			python3 "$TOP/scripts/qemu-monitor.py" where "$monitor" $system_map
			sleep 3
		done >"$results/cpus.txt" 2>&1) &
		watcher=$!
	fi
	wait $qemu || qemu_rc=$?
	wait $tailer 2>/dev/null || true
	for w in $watcher $stuck_watcher; do
		pkill -P "$w" 2>/dev/null || true
		kill "$w" 2>/dev/null || true
		wait "$w" 2>/dev/null || true
	done
	rm -f "$results/qemu.pid" "$monitor" "$results/stuck.now"
}

# The summary lines of cpus.txt: each sample, each CPU's place, local APIC
# and kernel stack words.
show_cpus() { grep -E '^(== |CPU [0-9]+[: ]|no answer)' "$results/cpus.txt" | sed 's/^/  | /'; }

boot_l1
if [ -f "$results/stuck" ] && [ ! -f "$results/rc" ]; then
	say "QEMU ran a guest for $((2 * ${L1_STUCK_POLL:-30}))s with L1's own timer interrupt pending, and L1 with it: TCG got stuck in the guest (docs/measurements.md); where:"
	sed 's/^/  | /' "$results/stuck"
	say "booting L1 once more (the first boot's logs: $results/stuck-1/)"
	[ -z "${L1_RETRIES:-}" ] || echo "RETRY l1/$name # QEMU ran a guest with L1's timer pending for $((2 * ${L1_STUCK_POLL:-30}))s: booted again ($results/stuck-1/)" >>"$L1_RETRIES"
	mkdir -p "$results.stuck-1"
	mv "$results"/* "$results.stuck-1/"
	mv "$results.stuck-1" "$results/stuck-1"
	command_script "$PWD" >"$results/cmd"
	: >"$results/output.log"
	boot_l1
fi
elapsed=$(($(date +%s) - start))

rc=0
if [ -f "$results/rc" ]; then
	rc=$(cat "$results/rc")
	say "L1 finished in ${elapsed}s; command exit status $rc"
elif [ -f "$results/stuck" ]; then
	say "QEMU got stuck in a guest again, with L1's own timer interrupt pending; where:"
	sed 's/^/  | /' "$results/stuck"
	show_cpus
	rc=126
elif [ $qemu_rc -eq 124 ] || [ $qemu_rc -eq 137 ]; then
	say "L1 timed out after ${timeout}s; last console lines:"
	tail -n 40 "$results/console.log" | sed 's/^/  | /'
	if [ -s "$results/hang.txt" ]; then
		say "what the command's tasks waited on ${margin}s before (all of it in $results/hang.txt):"
		head -n 200 "$results/hang.txt" | sed 's/^/  | /'
	fi
	if [ -s "$results/cpus.txt" ]; then
		say "where L1's CPUs were 20s before (registers, code and stacks in $results/cpus.txt):"
		show_cpus
	fi
	rc=124
else
	say "L1 ended (qemu status $qemu_rc) before the command finished; last console lines:"
	tail -n 40 "$results/console.log" | sed 's/^/  | /'
	rc=125
fi

# A boot stopped stuck in a guest had its kernel log too.  The whole log
# l1-init.sh keeps at the end (dmesg) holds what a console at a lower
# loglevel (L1_APPEND) did not print.
for log in "$results/stuck-1/console.log" "$results/console.log" "$results/dmesg"; do
	[ -f "$log" ] || continue
	if ! bash "$TOP/scripts/check-kernel-log.sh" "$log"; then
		[ "$rc" -ne 0 ] || rc=3
	fi
done
exit "$rc"
