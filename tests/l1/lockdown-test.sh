#!/bin/bash
# Runs inside L1 booted with lockdown=integrity, which Debian turns on with
# Secure Boot: there debugfs refuses writable files, and guest call chains
# must still be possible to turn on.
#
#   scripts/l1-run.sh -n lockdown bash tests/l1/lockdown-test.sh   (with
#   L1_APPEND=lockdown=integrity; scripts/all-tests.sh does that)
#
# Checks: lockdown is at integrity; guest_callchain_test's opt_in (the VM
# capability, also through a pidfd_getfd() copy) and a compiled call path
# with samples pass; kvm_guest_callchains opts a running QEMU's VM in and out,
# as its read-only debugfs file shows, and a write to that file is refused.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

fail() { echo "FAIL: $*"; exit 1; }

mountpoint -q /sys/kernel/security || mount -t securityfs securityfs /sys/kernel/security
mode=$(cat /sys/kernel/security/lockdown)
echo "lockdown: $mode"
[[ $mode == *"[integrity]"* ]] || fail "lockdown is not at integrity: $mode"
[ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug

knob=/sys/module/kvm/parameters/enable_guest_callchains
echo Y >"$knob" || fail "can't turn $knob on under lockdown"

# Each must pass: a skip here (beside those -t leaves out) fails the test.
for t in opt_in c_path_max_stack_3; do
	echo "guest_callchain_test -t $t"
	out=$("$SELFTESTS/x86/guest_callchain_test" -t "$t" 2>&1) || fail "guest_callchain_test -t $t: $out"
	results=$(python3 "$TOP/scripts/results.py" ktap "guest_callchain_test" <<<"$out")
	echo "$results"
	grep -qx "PASS guest_callchain_test/$t" <<<"$results" ||
		fail "guest_callchain_test -t $t did not pass: $results"
	! grep -v '^PASS' <<<"$results" || fail "guest_callchain_test -t $t: a sub-test did not pass"
done

# A VM under a VMM that knows nothing of guest call chains: QEMU, stopped
# before its first instruction (-S); the VM exists all the same.
qemu-system-x86_64 -machine q35,accel=kvm -m 64 -display none -nodefaults -S \
	-monitor none -serial none &
qemu=$!
trap 'kill $qemu 2>/dev/null || true' EXIT
file=
for _ in $(seq 100); do
	for f in /sys/kernel/debug/kvm/"$qemu"-*/guest_callchains; do
		[ -f "$f" ] && file=$f
	done
	[ -n "$file" ] && break
	kill -0 $qemu 2>/dev/null || fail "QEMU exited: $(wait $qemu; echo "status $?")"
	sleep 0.1
done
[ -n "$file" ] || fail "QEMU ($qemu) has no VM in /sys/kernel/debug/kvm"
[ "$(cat "$file")" = 0 ] || fail "$file: $(cat "$file") before opting in"

for level in chain stack off; do
	out=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu" $level 2>&1) ||
		fail "kvm_guest_callchains $qemu $level: $out"
	echo "kvm_guest_callchains $qemu $level: $out"
	case $level in chain) want=1 ;; stack) want=2 ;; off) want=0 ;; esac
	[ "$(cat "$file")" = $want ] || fail "$file: $(cat "$file") after $level"
done
out=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu") || fail "kvm_guest_callchains $qemu: $out"
echo "kvm_guest_callchains $qemu: $out"

# debugfs is locked down, and the file is read-only anyway.
if (echo 1 >"$file") 2>/dev/null; then
	fail "writing $file succeeded under lockdown"
fi
[ "$(cat "$file")" = 0 ] || fail "$file: $(cat "$file") after a refused write"
echo "lockdown: the VM's opt-in works; its debugfs file is read-only"
