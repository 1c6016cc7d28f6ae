#!/bin/bash
# tools/kvm-guest-callchains, the administrator's stop-gap that makes a VMM
# opt its VM in (it is not part of the kernel series): each wrong use gets
# one line and exit status 1 (2 for the command line), never a traceback,
# and a process without a VM is never stopped or traced.  Where this host's
# /dev/kvm opens, a process holding a VM is listed, and on a kernel without
# KVM_CAP_GUEST_CALLCHAINS refused before anything is seized.  The opt-in
# itself runs against QEMU in L1 (l1/lockdown, the demo).
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

# expect STATUS PATTERN WHAT ARGS...
expect() {
	local status=$1 pattern=$2 what=$3 out rc
	shift 3
	out=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$@" 2>&1)
	rc=$?
	if [ "$rc" = "$status" ] && grep -q -- "$pattern" <<<"$out" &&
		! grep -q Traceback <<<"$out"; then
		ok "$what: $(tail -n 1 <<<"$out")"
	else
		bad "$what: exit $rc (want $status), $out"
	fi
}
untouched() {
	local state tracer
	state=$(awk '/^State:/ { print $2 }' "/proc/$1/status")
	tracer=$(awk '/^TracerPid:/ { print $2 }' "/proc/$1/status")
	if [ "$state" = S ] && [ "$tracer" = 0 ]; then
		ok "process $1 left alone (state $state, no tracer)"
	else
		bad "process $1: state $state, tracer $tracer"
	fi
}

expect 2 usage "no PID"
expect 2 "invalid choice" "an unknown level" $$ sideways
pid_max=$(cat /proc/sys/kernel/pid_max)
expect 1 "no process $pid_max" "a PID that no process has" "$pid_max" chain
sleep 60 &
sleeper=$!
expect 1 "process $sleeper has no KVM VM" "a process without a VM" "$sleeper" chain
expect 1 "file descriptor 0 of process $sleeper is not a KVM VM" "--fd of a file that is not a VM" \
	--fd 0 "$sleeper" chain
untouched "$sleeper"
kill "$sleeper"

# A process that holds a VM (KVM_CREATE_VM) and does nothing else.
python3 - "$tmp/vm" <<'PY' &
import fcntl, os, sys, time
try:
    kvm = os.open('/dev/kvm', os.O_RDWR | os.O_CLOEXEC)
    vm = fcntl.ioctl(kvm, 0xAE01, 0)
    cap = fcntl.ioctl(kvm, 0xAE03, 252)
except OSError as e:
    open(sys.argv[1], 'w').write(f'none {e.strerror}\n')
    sys.exit(0)
open(sys.argv[1], 'w').write(f'{vm} {cap}\n')
time.sleep(60)
PY
holder=$!
for _ in $(seq 100); do [ -s "$tmp/vm" ] && break; sleep 0.1; done
read -r vmfd cap <"$tmp/vm" || vmfd=
case $vmfd in
'') bad "the VM holder said nothing" ;;
none) ok "not run here: /dev/kvm: $cap (the VM cases run where it opens)" ;;
*)
	expect 0 "pid $holder fd $vmfd: level" "listing a process's VMs" "$holder"
	if [ "$cap" = 0 ]; then
		expect 1 "offers no guest call chains" "a kernel without the capability" "$holder" chain
		untouched "$holder"
	else
		expect 0 "pid $holder fd $vmfd: level 1" "opting a VM in" "$holder" chain
	fi
	;;
esac
kill "$holder" 2>/dev/null
wait 2>/dev/null
exit $fail
