#!/bin/bash
# What a VM's opt-in to guest call chains costs its memslot updates: boot
# QEMU's SeaBIOS to "No bootable device." (PAM and SMRAM toggles, PCI BARs:
# memslot updates all of it) inside L1, opted in and not, alternating, and
# print the medians of the boot's time and of the function-call IPIs the
# host took meanwhile (/proc/interrupts' CAL line: an expedited RCU grace
# period sends one to every other CPU that isn't idle), and, from boots with
# strace attached, of the number of KVM_SET_USER_MEMORY_REGION ioctls and
# the time they took.
#
#   bench/memslot-boot.sh [ROUNDS]                  (boots L1; default 8)
#   L1_KERNEL=path/to/bzImage bench/memslot-boot.sh  (another kernel)
#
# Inside L1 it runs itself with --in-l1.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

rounds=${1:-8}
if [ "${1:-}" != --in-l1 ]; then
	exec bash "$TOP/scripts/l1-run.sh" -t 1200 -n memslot-boot \
		bash "$TOP/bench/memslot-boot.sh" --in-l1 "$rounds"
fi
rounds=${2:-8}

fail() { echo "memslot-boot: $*" >&2; exit 1; }
mountpoint -q /sys/kernel/debug || mount -t debugfs debugfs /sys/kernel/debug
echo Y >/sys/module/kvm/parameters/enable_guest_callchains
work=$(mktemp -d)
qemu=
trap 'kill $qemu 2>/dev/null || true; rm -rf "$work"' EXIT

ipis() { awk '$1 == "CAL:" { n = 0; for (i = 2; i <= NF && $i ~ /^[0-9]+$/; i++) n += $i; print n }' /proc/interrupts; }
qmp_out() { python3 "$TOP/scripts/qmp.py" "$work/qmp" "$1"; }
qmp() { qmp_out "$1" >/dev/null; }

# One boot: "MS IPIS MEMSLOTS MEMSLOT_US" on stdout, the boot's time and
# function-call IPIs, and with strace attached (TRACE=1: the boot's time is
# then strace's), the number of KVM_SET_USER_MEMORY_REGION ioctls and the
# microseconds they took; "timeout" if SeaBIOS didn't finish in 40 s (L2's
# timers stall now and then under nested TCG).
boot() {
	local opt_in=$1 trace=$2 start end before after deadline tracer= accel=kvm
	rm -f "$work/debugcon" "$work/qmp" "$work/strace"
	# Opted in from its creation, by the guests' QEMU (patches/qemu).
	[ "$opt_in" != 1 ] || accel+=,guest-callchains=chain
	"$GUEST_QEMU" -machine q35 -accel "$accel" -smp 1 -m 128 -display none -nodefaults \
		-S -chardev file,id=dc,path="$work/debugcon" \
		-device isa-debugcon,iobase=0x402,chardev=dc \
		-qmp unix:"$work/qmp",server=on,wait=off -serial none 2>/dev/null &
	qemu=$!
	for _ in $(seq 200); do
		[ -S "$work/qmp" ] && break
		sleep 0.05
	done
	[ -S "$work/qmp" ] || fail "QEMU has no QMP socket"
	if [ "$opt_in" = 1 ] && [[ $(qmp_out query-guest-callchains) != *'"level": "chain"'* ]]; then
		fail "QEMU did not opt the VM in: $(qmp_out query-guest-callchains)"
	fi
	if [ "$trace" = 1 ]; then
		strace -f -qq -T -e trace=ioctl -e signal=none -o "$work/strace" -p "$qemu" &
		tracer=$!
		sleep 1
	fi
	before=$(ipis)
	start=$(date +%s%N)
	qmp cont
	deadline=$(($(date +%s) + 40))
	while ! grep -q "No bootable device" "$work/debugcon" 2>/dev/null &&
		[ "$(date +%s)" -lt "$deadline" ]; do
		sleep 0.05
	done
	end=$(date +%s%N)
	after=$(ipis)
	[ -z "$tracer" ] || kill "$tracer" 2>/dev/null || true
	kill $qemu
	for _ in $(seq 300); do
		kill -0 $qemu 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 $qemu 2>/dev/null; then
		show_threads
		fail "QEMU $qemu did not exit"
	fi
	wait $qemu 2>/dev/null || true
	[ -z "$tracer" ] || wait "$tracer" 2>/dev/null || true
	qemu=
	if ! grep -q "No bootable device" "$work/debugcon"; then
		echo timeout
		return
	fi
	echo "$(((end - start) / 1000000)) $((after - before))" \
		"$(awk '/KVM_SET_USER_MEMORY_REGION/ && match($0, /<[0-9.]+>$/) {
			n++; us += substr($0, RSTART + 1, RLENGTH - 2) * 1e6 }
			END { printf "%d %d", n, us }' "$work/strace" 2>/dev/null || echo "0 0")"
}

# Where QEMU's threads are, when something hangs.
show_threads() {
	local t
	for t in "/proc/$qemu/task/"*; do
		echo "$t: $(cat "$t/syscall" 2>&1) $(grep State "$t/status")" >&2
		sed 's/^/    /' "$t/stack" >&2 2>/dev/null || true
	done
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

: >"$work/off"
: >"$work/on"
timeouts=0
for round in $(seq "$rounds"); do
	for opt_in in 0 1; do
		# Odd rounds time the boot; even ones time its memslot ioctls.
		boot $opt_in $((1 - round % 2)) >"$work/result"
		if [ "$(cat "$work/result")" = timeout ]; then
			timeouts=$((timeouts + 1))
			echo "round $round, opted in $opt_in: SeaBIOS did not finish in 40 s (not counted)"
			continue
		fi
		read -r ms calls slots slot_us <"$work/result"
		if [ $opt_in = 1 ]; then set=on; else set=off; fi
		if [ $((round % 2)) = 1 ]; then
			echo "$ms $calls" >>"$work/$set"
			echo "round $round, opted in $opt_in: boot $ms ms, $calls function-call IPIs"
		else
			echo "$slots $slot_us" >>"$work/$set.slots"
			echo "round $round, opted in $opt_in: $slots memslot ioctls took $slot_us us (strace)"
		fi
	done
done
for set in off on; do
	echo "opted in: $set  median boot $(cut -d' ' -f1 "$work/$set" | median) ms," \
		"function-call IPIs $(cut -d' ' -f2 "$work/$set" | median)," \
		"memslot ioctls $(cut -d' ' -f1 "$work/$set.slots" | median)" \
		"taking $(cut -d' ' -f2 "$work/$set.slots" | median) us (medians)"
done
echo "boots that did not finish: $timeouts"
echo "kernel: $(uname -r) $(uname -v)"
