#!/bin/bash
# Runs inside L1 booted with lockdown=integrity, which Debian turns on with
# Secure Boot: there debugfs refuses writable files, and guest call chains
# must still be possible to turn on.
#
#   scripts/l1-run.sh -n lockdown bash tests/l1/lockdown-test.sh   (with
#   L1_APPEND=lockdown=integrity; scripts/all-tests.sh does that)
#
# Checks: lockdown is at integrity; guest_callchain_opt_in_test (the VM
# capability) and a compiled call path with samples pass; kvm_guest_callchains
# makes a running QEMU (a busy vCPU, its main loop in ppoll()) opt its VM in
# and out, as its read-only debugfs file shows, and the guest and QEMU's
# monitor carry on; no other process can set the level; a write to the
# debugfs file is refused.
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
for t in guest_callchain_opt_in_test:opt_in guest_callchain_test:c_path_max_stack_3; do
	prog=${t%%:*} t=${t#*:}
	echo "$prog -t $t"
	out=$("$SELFTESTS/x86/$prog" -t "$t" 2>&1) || fail "$prog -t $t: $out"
	results=$(python3 "$TOP/scripts/results.py" ktap "$prog" <<<"$out")
	echo "$results"
	grep -qx "PASS $prog/$t" <<<"$results" || fail "$prog -t $t did not pass: $results"
	! grep -v '^PASS' <<<"$results" || fail "$prog -t $t: a sub-test did not pass"
done

# A VM under a VMM that knows nothing of guest call chains, running: QEMU
# with one vCPU busy in a loop that writes a byte to the debug console every
# 2^20 rounds (tests/l1/busy-bios.py), its main loop in ppoll(), its QMP monitor
# on a socket.  The tool makes QEMU itself issue KVM_ENABLE_CAP; the guest
# and QEMU must carry on unharmed.
work=$(mktemp -d)
python3 "$TOP/tests/l1/busy-bios.py" "$work/busy.bin"
qemu-system-x86_64 -machine q35,accel=kvm -smp 1 -m 64 -display none -nodefaults \
	-bios "$work/busy.bin" -chardev file,id=dc,path="$work/debugcon" \
	-device isa-debugcon,iobase=0x402,chardev=dc \
	-qmp unix:"$work/qmp",server=on,wait=off -serial none &
qemu=$!
trap 'kill $qemu 2>/dev/null || true; rm -rf "$work"' EXIT
file=
for _ in $(seq 100); do
	for f in /sys/kernel/debug/kvm/"$qemu"-*/guest_callchains; do
		[ -f "$f" ] && file=$f
	done
	[ -n "$file" ] && [ -S "$work/qmp" ] && break
	kill -0 $qemu 2>/dev/null || fail "QEMU exited: $(wait $qemu; echo "status $?")"
	sleep 0.1
done
[ -n "$file" ] || fail "QEMU ($qemu) has no VM in /sys/kernel/debug/kvm"
[ "$(cat "$file")" = 0 ] || fail "$file: $(cat "$file") before opting in"

# The guest's progress: the bytes it writes in 2 seconds.
progress() {
	local before
	before=$(stat -c %s "$work/debugcon")
	sleep 2
	echo $(($(stat -c %s "$work/debugcon") - before))
}
# QMP's answer to query-status: "running" if QEMU and its monitor are well.
qmp_status() {
	python3 "$TOP/scripts/qmp.py" "$work/qmp" query-status |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])'
}
main_syscall() { cut -d' ' -f1 "/proc/$qemu/syscall"; }

before=$(progress)
[ "$before" -gt 0 ] || fail "the guest made no progress before the opt-in"
for _ in $(seq 50); do
	[ "$(main_syscall)" = 271 ] && break
	sleep 0.1
done
[ "$(main_syscall)" = 271 ] || fail "QEMU's main thread is not in ppoll(): $(cat "/proc/$qemu/syscall")"
echo "QEMU $qemu: guest wrote $before bytes in 2 s, main thread in ppoll(), QMP: $(qmp_status)"

for level in chain stack off chain; do
	out=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu" $level 2>&1) ||
		fail "kvm_guest_callchains $qemu $level: $out"
	echo "kvm_guest_callchains $qemu $level: $out"
	case $level in chain) want=1 ;; stack) want=2 ;; off) want=0 ;; esac
	[ "$(cat "$file")" = $want ] || fail "$file: $(cat "$file") after $level"
done
out=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu") || fail "kvm_guest_callchains $qemu: $out"
echo "kvm_guest_callchains $qemu: $out"

after=$(progress)
[ "$after" -gt 0 ] || fail "the guest made no progress after the opt-in"
status=$(qmp_status) || fail "QMP did not answer after the opt-in"
[ "$status" = running ] || fail "QEMU is not running after the opt-in: $status"
kill -0 $qemu || fail "QEMU died"
echo "QEMU $qemu after the opt-in: guest wrote $after bytes in 2 s, QMP: $status"

# Nobody but QEMU can set the VM's level: an ioctl on a copy of its VM's file
# descriptor fails in any other process (guest_callchain_test's opt_in checks
# that too), so the tool's way is the only way in.
vmfd=${file##*-}
vmfd=${vmfd%/guest_callchains}
cap_nr=$(sed -n 's/^#define KVM_CAP_GUEST_CALLCHAINS \([0-9]*\)$/\1/p' "$TREE/include/uapi/linux/kvm.h")
[ -n "$cap_nr" ] || fail "no KVM_CAP_GUEST_CALLCHAINS in $TREE/include/uapi/linux/kvm.h"
python3 - "$qemu" "$vmfd" "$cap_nr" <<'PY' || fail "KVM took KVM_ENABLE_CAP from a process other than QEMU"
import ctypes, errno, fcntl, os, struct, sys
libc = ctypes.CDLL(None, use_errno=True)
pidfd = os.pidfd_open(int(sys.argv[1]))
copy = libc.syscall(438, pidfd, int(sys.argv[2]), 0)
assert copy >= 0, os.strerror(ctypes.get_errno())
cap = struct.pack('=II4Q64x', int(sys.argv[3]), 0, 1, 0, 0, 0)
try:
    fcntl.ioctl(copy, (1 << 30) | (len(cap) << 16) | (0xAE << 8) | 0xa3, cap)
except OSError as e:
    sys.exit(0 if e.errno == errno.EIO else 1)
sys.exit(1)
PY
[ "$(cat "$file")" = 1 ] || fail "$file: $(cat "$file") after another process's KVM_ENABLE_CAP"
python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu" off >/dev/null || fail "kvm_guest_callchains $qemu off"

# debugfs is locked down, and the file is read-only anyway.
if (echo 1 >"$file") 2>/dev/null; then
	fail "writing $file succeeded under lockdown"
fi
[ "$(cat "$file")" = 0 ] || fail "$file: $(cat "$file") after a refused write"
echo "lockdown: the VM's opt-in works; its debugfs file is read-only"
