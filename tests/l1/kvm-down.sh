#!/bin/bash
# Runs inside L1: the KVM-accelerated L1 path, one level down.  L1 (under
# TCG where the bench has no VMX or SVM) is a host with /dev/kvm and SVM,
# so scripts/l1-run.sh run here must choose KVM (lib.sh's l1_accel) and
# boot our kernel under KVM with -cpu host: that inner L1 must run the
# command, have SVM itself (kvm_amd loads, nested=1, /dev/kvm), and have
# its kernel log checked as any L1's.  Its files go to $L1_RESULTS/out;
# prints "PASS|FAIL l1/kvm-down" last.
#
# It failed on QEMU 10.0's and 10.2's TCG as packaged (the inner L1 took
# an interrupt twice, inside its own handler; or KVM refused its MMIO,
# "KVM internal error. Suberror: 3"): scripts/qemu.sh's patches fix both.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
results=${L1_RESULTS:?runs inside L1}/out
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL l1/kvm-down: $*"; exit 1; }

# Where this L1 is itself emulated (TCG), every character the inner L1
# prints on its serial console and each read of acpi_pm by the clocksource
# watchdog is a round trip through both levels: at loglevel=7 its boot
# alone took over 400 s here.  So it prints warnings and worse only
# (l1-run.sh checks its whole log, kept in dmesg) and trusts its TSC.
rc=0
OUT=$results L1_MEM=${KVM_DOWN_MEM:-2G} L1_APPEND="loglevel=5 tsc=reliable ${L1_APPEND:-}" bash "$TOP/scripts/l1-run.sh" -t 400 -n inner sh -c \
	'echo inner: $(uname -r), kvm_amd nested=$(cat /sys/module/kvm_amd/parameters/nested), $([ -c /dev/kvm ] && echo /dev/kvm)' \
	>"$out" 2>&1 || rc=$?
sed 's/^/    | /' "$out"
[ $rc -eq 0 ] || fail "l1-run.sh (or the inner L1) failed: status $rc"
grep -q '^\[l1-run\] L1 under KVM: this host has /dev/kvm and svm' "$out" ||
	fail "l1-run.sh in L1 did not choose KVM"
[ "$(cat "$results/l1/inner/accel" 2>/dev/null)" = kvm ] ||
	fail "the inner L1 did not run under KVM (its accel file)"
# What the inner L1's command printed, from its file: l1-run.sh streams it
# too, but may stop streaming before the end (tail on a 9p file in L1).
inner=$(tr -d '\r' <"$results/l1/inner/output.log" 2>/dev/null)
grep -q '^inner: .*, kvm_amd nested=1, /dev/kvm$' <<<"$inner" ||
	fail "the inner L1 (under KVM) did not run the command with SVM and /dev/kvm: $(tail -n 3 <<<"$inner")"
grep -q "^\[check-kernel-log\] clean: .*/inner/console.log" "$out" ||
	fail "the inner L1's kernel log was not checked clean"
echo "PASS l1/kvm-down: l1-run.sh chose KVM, booted our kernel under it with SVM, its log clean"
