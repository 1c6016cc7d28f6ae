#!/bin/bash
# lib.sh's l1_accel, how L1 runs, on made-up hosts (CPUINFO, KVM_DEV): KVM
# where the CPU has vmx or svm and /dev/kvm can be read and written, TCG
# otherwise, each with why; L1_ACCEL chooses, and a wrong one is refused.
# (tests/l1/run.sh checks the choice one level down, in L1, which has
# /dev/kvm and SVM.)
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

printf 'flags\t\t: fpu vme svm npt\n' >"$tmp/svm"
printf 'flags\t\t: fpu vme vmx ept\n' >"$tmp/vmx"
printf 'flags\t\t: fpu vme hypervisor\n' >"$tmp/none"
: >"$tmp/kvm"
# expect CPU DEV [L1_ACCEL] WANT WHY-PATTERN
expect() {
	local out
	out=$(CPUINFO=$tmp/$1 KVM_DEV=$2 L1_ACCEL=$3 l1_accel 2>&1)
	if [ "${out%%$'\t'*}" = "$4" ] && grep -qE -- "$5" <<<"${out#*$'\t'}"; then
		ok "cpu $1, ${2##*/}${3:+, L1_ACCEL=$3}: $out"
	else
		bad "cpu $1, ${2##*/}${3:+, L1_ACCEL=$3}: '$out', want $4 and /$5/"
	fi
}
expect svm "$tmp/kvm" "" kvm 'has .*kvm and svm: L1 runs SVM in hardware'
expect vmx "$tmp/kvm" "" kvm 'has .*kvm and vmx: L1 runs VMX in hardware'
expect none "$tmp/kvm" "" tcg 'no vmx or svm flag'
expect svm "$tmp/nokvm" "" tcg 'svm, but .*nokvm is not there'
expect svm "$tmp/kvm" tcg tcg 'L1_ACCEL=tcg'
expect none "$tmp/nokvm" kvm kvm 'L1_ACCEL=kvm'
if (CPUINFO=$tmp/svm KVM_DEV=$tmp/kvm L1_ACCEL=hvf l1_accel) >"$tmp/out" 2>&1; then
	echo "FAILED: L1_ACCEL=hvf accepted: $(cat "$tmp/out")"
	fail=1
else
	echo "ok: L1_ACCEL=hvf refused: $(cat "$tmp/out")"
fi
# What this host gets.
echo "this host: $(l1_accel)"
exit $fail
