#!/bin/bash
# The guests' QEMU (patches/qemu) on a host booted into the series' kernel,
# as root: make check-host's part "qemu" (make check runs it inside L1).
#
#   qemu/functional/TEST  QEMU's own functional test of the series
#                         (tests/functional/x86_64/test_guest_callchains.py
#                         in the QEMU tree), a result per test case: under
#                         KVM, the property, the QMP and HMP commands and
#                         their errors, the guest running throughout
#   qemu/functional-chain-only/TEST
#                         the same where KVM offers VMs 'chain' but not
#                         'stack' (tests/l1/kvm-offers.c, an LD_PRELOAD
#                         shim answering KVM_CHECK_EXTENSION as such a host
#                         would): the cases of a level KVM refuses run
#   qemu/refusals         a kernel without the capability and a
#                         confidential VM, as the shim makes KVM answer:
#                         QEMU does not start with the property, says why
#                         in one line, and the commands refuse alike while
#                         the guest runs
#   qemu/kvm-level        what QEMU sets is what KVM holds: the VM's level in
#                         KVM's debugfs after the property, after each QMP
#                         and HMP change, and unchanged by a refused one
#   qemu/destroy          set-guest-callchains while the VM is destroyed
#                         (queued behind quit; sent while QEMU ends on
#                         SIGTERM): QEMU ends cleanly each time
#
#   STAGE_RESULTS=FILE tests/l1/qemu-test.sh [--functional-only PREFIX]
#
# A line "PASS|FAIL|SKIP NAME" per result to STAGE_RESULTS.
# --functional-only: QEMU's functional test alone, its results under
# PREFIX/functional/ (make check runs it so on its own host, whose KVM
# may offer no level: the refusals of a kernel without the series, for
# real).  The functional test and its Python modules come from the QEMU
# tree of scripts/guest-qemu.sh ($GUEST_QEMU_DIR/src); $GUEST_QEMU is the
# QEMU run.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"
qemu_tree=$GUEST_QEMU_DIR/src
prefix=qemu only=
if [ "${1:-}" = --functional-only ]; then
	prefix=${2:?usage: $0 [--functional-only PREFIX]} only=1
fi
[ -x "$GUEST_QEMU" ] || die "no QEMU at $GUEST_QEMU: run scripts/guest-qemu.sh"
# The QEMU tree and pycotap, where a packaged QEMU is tested.
[ -d "$qemu_tree/tests/functional" ] || bash "$TOP/scripts/guest-qemu.sh" tree >&2 ||
	die "no QEMU tree at $qemu_tree"
qemu_build_tools "$GUEST_QEMU_DIR/tools"
[ -n "$only" ] || [ -d /sys/kernel/debug/kvm ] || mount -t debugfs debugfs /sys/kernel/debug
work=$(mktemp -d)
qemus=()
trap 'kill "${qemus[@]}" 2>/dev/null; rm -rf "$work"' EXIT
record() { echo "$1 $2" | tee -a "$STAGE_RESULTS"; }

# functional NAME [ENV...]: QEMU's functional test, with ENV; pycotap's
# TAP, a result per test case, under qemu/NAME/.
functional() {
	local name=$1 log=$work/$1.log rc=0
	shift
	mkdir -p "$work/qemu-build"
	(cd "$qemu_tree/tests/functional/x86_64" && env "$@" \
		PYTHONPATH=$qemu_tree/python:$qemu_tree/tests/functional:$GUEST_QEMU_DIR/tools/usr/lib/python3/dist-packages \
		QEMU_TEST_QEMU_BINARY=$GUEST_QEMU QEMU_BUILD_ROOT=$work/qemu-build \
		timeout -k 5 600 python3 test_guest_callchains.py) >"$log" 2>&1 || rc=$?
	python3 "$TOP/scripts/results.py" ktap "$prefix/$name" <"$log" |
		sed "s|$prefix/$name/test_guest_callchains\.GuestCallchains\.|$prefix/$name/|" |
		tee -a "$STAGE_RESULTS"
	if [ $rc -ne 0 ]; then
		echo "    test_guest_callchains.py: exit status $rc"
		tail -n 40 "$log" | sed 's/^/    | /'
		find "$work/qemu-build" -name '*.log' -newer "$log" -exec tail -n 5 {} + 2>/dev/null | sed 's/^/    | /'
	fi
}

# refused NAME ACCEL WANT [ENV...]: QEMU with ACCEL, under ENV, must not
# start, and say WANT.
refused() {
	local name=$1 accel=$2 want=$3 rc=0
	shift 3
	env "$@" "$GUEST_QEMU" -machine q35 -accel "$accel" -m 64 -display none -nodefaults \
		-bios "$work/busy.bin" -serial none >"$work/$name.out" 2>&1 || rc=$?
	if [ $rc -ne 1 ] || ! grep -qF -- "$want" "$work/$name.out"; then
		echo "    -accel $accel ($*): exit status $rc, not 1 with \"$want\": $(cat "$work/$name.out")"
		return 1
	fi
	echo "    -accel $accel ($*): $(head -n 1 "$work/$name.out")"
}

# A kernel without the capability, a confidential VM: the property is
# refused at start-up; started without it, the commands refuse alike,
# 'off' is accepted, and the guest runs.
refusals_check() {
	local none=(KVM_OFFERS_SYSTEM=0 KVM_OFFERS_VM=0) sev=(KVM_OFFERS_VM=0) out
	local msg_none="this host's KVM has no guest call chains (KVM_CAP_GUEST_CALLCHAINS)"
	local msg_sev="KVM can't read this VM's memory and state (a confidential VM)"
	refused no-cap kvm,guest-callchains=chain "guest-callchains=chain: $msg_none" "${shim[@]}" "${none[@]}" || return 1
	refused sev kvm,guest-callchains=stack "guest-callchains=stack: $msg_sev" "${shim[@]}" "${sev[@]}" || return 1
	start_env=("${shim[@]}" "${none[@]}")
	start no-cap-running kvm || return 1
	start_env=()
	out=$(qmp no-cap-running query-guest-callchains) || return 1
	[ "$out" = '{"level": "off", "max-level": "off"}' ] || { echo "    query-guest-callchains: $out"; return 1; }
	if out=$(qmp no-cap-running set-guest-callchains '{"level": "chain"}' 2>&1); then
		echo "    set-guest-callchains chain succeeded on a kernel without the capability"
		return 1
	fi
	[[ $out == *"$msg_none"* ]] || { echo "    set-guest-callchains chain: $out"; return 1; }
	echo "    set-guest-callchains chain: $out"
	qmp no-cap-running set-guest-callchains '{"level": "off"}' >/dev/null || return 1
	[ "$(progress no-cap-running)" -gt 0 ] || { echo "    the guest made no progress"; return 1; }
}

# start NAME ACCEL: a QEMU with a busy vCPU (tests/l1/busy-bios.py) and a
# QMP socket at $work/NAME.qmp, up and answering; its PID in $qemu, its
# debugfs level file in $level_file; ${start_env[@]} in its environment.
start() {
	local name=$1 accel=$2 f
	env "${start_env[@]}" "$GUEST_QEMU" -machine q35 -accel "$accel" -smp 1 -m 64 -display none -nodefaults \
		-bios "$work/busy.bin" -chardev file,id=dc,path="$work/$name.debugcon" \
		-device isa-debugcon,iobase=0x402,chardev=dc \
		-qmp unix:"$work/$name.qmp",server=on,wait=off -serial none 2>"$work/$name.stderr" &
	qemu=$!
	qemus+=("$qemu")
	level_file=
	[ ${#start_env[@]} -eq 0 ] || level_file=none
	for _ in $(seq 300); do
		for f in /sys/kernel/debug/kvm/"$qemu"-*/guest_callchains; do
			[ -f "$f" ] && level_file=$f
		done
		# Up once its monitor answers: its main loop runs then.
		[ -n "$level_file" ] && [ -S "$work/$name.qmp" ] &&
			qmp "$name" query-status >/dev/null 2>&1 && return 0
		kill -0 "$qemu" 2>/dev/null || break
		sleep 0.1
	done
	echo "    QEMU $name did not start: $(cat "$work/$name.stderr")"
	return 1
}
qmp() { python3 "$TOP/scripts/qmp.py" "$work/$1.qmp" "${@:2}"; }
kvm_level() { cat "$level_file"; }
# The guest's progress: the bytes it wrote in a second.
progress() {
	local before
	before=$(stat -c %s "$work/$1.debugcon")
	sleep 1
	echo $(($(stat -c %s "$work/$1.debugcon") - before))
}

kvm_level_check() {
	local level want out
	start level kvm,guest-callchains=chain || return 1
	[ "$(kvm_level)" = 1 ] || { echo "    KVM holds level $(kvm_level) after guest-callchains=chain"; return 1; }
	for level in stack off chain; do
		case $level in off) want=0 ;; chain) want=1 ;; stack) want=2 ;; esac
		qmp level set-guest-callchains "{\"level\": \"$level\"}" >/dev/null || return 1
		[ "$(kvm_level)" = $want ] || { echo "    KVM holds level $(kvm_level) after set-guest-callchains $level"; return 1; }
		echo "    set-guest-callchains $level: KVM holds $want"
	done
	qmp level human-monitor-command '{"command-line": "set_guest_callchains off"}' >/dev/null || return 1
	[ "$(kvm_level)" = 0 ] || { echo "    KVM holds level $(kvm_level) after set_guest_callchains off"; return 1; }
	qmp level set-guest-callchains '{"level": "chain"}' >/dev/null || return 1
	if out=$(qmp level set-guest-callchains '{"level": "sometimes"}' 2>&1); then
		echo "    set-guest-callchains sometimes succeeded"
		return 1
	fi
	echo "    set-guest-callchains sometimes: $out"
	[ "$(kvm_level)" = 1 ] || { echo "    KVM holds level $(kvm_level) after a refused change"; return 1; }
	out=$(qmp level query-guest-callchains) || return 1
	echo "    query-guest-callchains: $out"
	[ "$out" = '{"level": "chain", "max-level": "stack"}' ] || return 1
	[ "$(progress level)" -gt 0 ] || { echo "    the guest made no progress"; return 1; }
	[ "$(qmp level query-status | python3 -c 'import json, sys; print(json.load(sys.stdin)["status"])')" = running ] ||
		{ echo "    QEMU is not running"; return 1; }
}

# QEMU told to quit with set-guest-callchains queued behind, then one
# killed with SIGTERM while a client sends them as fast as it can: each
# QEMU must end with status 0 (no abort, no crash).
destroy_check() {
	local rc
	start quit kvm,guest-callchains=chain || return 1
	python3 - "$work/quit.qmp" <<'PY' || return 1
import json, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(30)
sock.connect(sys.argv[1])
stream = sock.makefile("rw")
stream.readline()
stream.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
stream.write(json.dumps({"execute": "quit"}) + "\n")
for i in range(200):
    level = ("chain", "off", "stack")[i % 3]
    stream.write(json.dumps({"execute": "set-guest-callchains",
                             "arguments": {"level": level}}) + "\n")
try:
    stream.flush()
    while stream.readline():
        pass
except OSError:
    pass
PY
	wait "$qemu"
	rc=$?
	[ $rc -eq 0 ] || { echo "    QEMU ended with status $rc after quit: $(cat "$work/quit.stderr")"; return 1; }
	echo "    quit with 200 set-guest-callchains behind it: QEMU ended with status 0"

	start term kvm,guest-callchains=chain || return 1
	python3 - "$work/term.qmp" <<'PY' &
import json, socket, sys
sock = socket.socket(socket.AF_UNIX)
sock.settimeout(30)
sock.connect(sys.argv[1])
stream = sock.makefile("rw")
stream.readline()
try:
    stream.write(json.dumps({"execute": "qmp_capabilities"}) + "\n")
    stream.flush()
    stream.readline()
    i = 0
    while True:
        level = ("chain", "off", "stack")[i % 3]
        stream.write(json.dumps({"execute": "set-guest-callchains",
                                 "arguments": {"level": level}}) + "\n")
        stream.flush()
        if not stream.readline():
            break
        i += 1
except OSError:
    pass
PY
	local client=$!
	sleep 1
	kill -TERM "$qemu"
	wait "$qemu"
	rc=$?
	wait "$client"
	[ $rc -eq 0 ] || { echo "    QEMU ended with status $rc on SIGTERM: $(cat "$work/term.stderr")"; return 1; }
	echo "    SIGTERM while a client changes the level: QEMU ended with status 0"
}

python3 "$TOP/tests/l1/busy-bios.py" "$work/busy.bin"
# The shim, with the capability's number QEMU was built with.
cap=$(sed -n 's/^#define KVM_CAP_GUEST_CALLCHAINS \([0-9]*\)$/\1/p' "$qemu_tree/linux-headers/linux/kvm.h")
[ -n "$cap" ] || die "no KVM_CAP_GUEST_CALLCHAINS in $qemu_tree/linux-headers/linux/kvm.h"
gcc -O2 -Wall -shared -fPIC -o "$work/kvm-offers.so" "$TOP/tests/l1/kvm-offers.c" -ldl ||
	die "could not build tests/l1/kvm-offers.c"
shim=(LD_PRELOAD="$work/kvm-offers.so" KVM_OFFERS_CAP="$cap")
start_env=()
say "$("$GUEST_QEMU" --version | head -n1) at $GUEST_QEMU; its tests from $qemu_tree"
functional functional
# The exit status: whether any result failed.
verdict() { ! grep -q "^FAIL $prefix/" "$STAGE_RESULTS"; }
[ -z "$only" ] || { verdict; exit; }
functional functional-chain-only "${shim[@]}" KVM_OFFERS_VM=1
for check in kvm-level destroy refusals; do
	if "${check/-/_}_check"; then
		record PASS "qemu/$check"
	else
		record FAIL "qemu/$check"
	fi
done
verdict
