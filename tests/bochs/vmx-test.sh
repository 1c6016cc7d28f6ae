#!/bin/bash
# KVM's Intel code, executed: the guest call chain tests on our kernel under Bochs
# (scripts/bochs-run.sh), whose emulated CPU has VMX with EPT, kvm_intel
# loaded, the kernel log checked as L1's is.
#
#   tests/bochs/vmx-test.sh          the sub-tests below ('make check')
#   tests/bochs/vmx-test.sh --all    every sub-test ('make bochs')
#
# The test runs with -i (Bochs 2.7 takes external-interrupt exits only
# while the guest has interrupts enabled) and -p 1000000 (a sample every
# millisecond: at Bochs' speed a sample of the lockdep kernel takes more
# than the default 100 us); see its help.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

# One of each kind, as PROGRAM:NAME (a name runs every sub-test of PROGRAM
# whose name contains it): those tests/expected names intel/PROGRAM/NAME,
# the one list of them (the compiled path, 64-bit kernel and user stacks,
# a CR3 switch without exits (CR3 read live from the VMCS), compat and
# 32-bit PAE user code, real mode (no chain), stack windows and a link
# from one to another, BPF, no guest state in the softirqs after VMX's
# handle_exit_irqoff(), the race, the host part of guest samples from
# VMX's external-interrupt exit path; about 200 s here).
mapfile -t subtests < <(awk -F'\t' '$1 ~ /^intel\/[a-z_]+\/[a-z0-9_]+$/ {
	split($1, part, "/"); print part[2] ":" part[3] }' "$TOP/tests/expected")
[ ${#subtests[@]} -gt 0 ] || die "tests/expected names no intel/PROGRAM/SUBTEST"
programs=(guest_callchain_test guest_callchain_walk_test guest_stack_window_test
	guest_callchain_opt_in_test guest_callchain_race_test guest_host_callchain_test)
options="-i -p 1000000"
check_vmx='grep -qw vmx /proc/cpuinfo && [ "$(cat /sys/module/kvm_intel/parameters/ept)" = Y ] || { echo "no kvm_intel with EPT"; exit 1; }; echo "kvm_intel: ept=$(cat /sys/module/kvm_intel/parameters/ept) unrestricted_guest=$(cat /sys/module/kvm_intel/parameters/unrestricted_guest) vpid=$(cat /sys/module/kvm_intel/parameters/vpid)"'
# Each run starts with a line "=== PROGRAM", which sorts its results.
if [ "${1:-}" = --all ]; then
	name=vmx-all
	script="$check_vmx; rc=0; for p in ${programs[*]}; do echo === \$p; x86/\$p $options || rc=1; done; exit \$rc"
else
	[ $# -eq 0 ] || die "usage: $0 [--all]"
	name=vmx
	script="$check_vmx; rc=0; for t in ${subtests[*]}; do echo === \${t%%:*}; x86/\${t%%:*} $options -t \${t#*:} || rc=1; done; exit \$rc"
fi
rc=0
bash "$TOP/scripts/bochs-run.sh" -t 1200 -n "$name" sh -c "$script" || rc=$?
# A result per sub-test (scripts/results.py), for make check's accounting
# when it runs this ($STAGE_RESULTS); every sub-test named (with --all:
# every sub-test there is) must pass, with samples: a skip is no pass.
for p in "${programs[@]}"; do rm -f "$OUT/bochs/$name/$p.log"; done
tr -d '\r' <"$OUT/bochs/$name/output.log" | awk -v dir="$OUT/bochs/$name" '
	/^=== [a-z_]+$/ { file = dir "/" $2 ".log"; next }
	file { print >>file }'
: >"$OUT/bochs/$name/results.txt"
: >"$OUT/bochs/$name/passed"
for p in "${programs[@]}"; do
	[ -f "$OUT/bochs/$name/$p.log" ] || continue
	python3 "$TOP/scripts/results.py" ktap "intel/$p" <"$OUT/bochs/$name/$p.log" >>"$OUT/bochs/$name/results.txt"
	grep -E '^ok [0-9]+ [a-z][^#]*: [0-9]+ samples' "$OUT/bochs/$name/$p.log" |
		sed -E "s/^ok [0-9]+ ([a-z0-9_]+).*/$p:\1/" >>"$OUT/bochs/$name/passed"
	rm -f "$OUT/bochs/$name/$p.log"
done
[ -z "${STAGE_RESULTS:-}" ] || cat "$OUT/bochs/$name/results.txt" >>"$STAGE_RESULTS"
sort -u -o "$OUT/bochs/$name/passed" "$OUT/bochs/$name/passed"
missing=0
if [ "$name" = vmx-all ]; then
	grep -v '^PASS' "$OUT/bochs/$name/results.txt" | sed 's/^/FAILED: under VMX: /' && missing=1
else
	for t in "${subtests[@]}"; do
		grep -qx "$t" "$OUT/bochs/$name/passed" || { echo "FAILED: $t did not pass under VMX"; missing=1; }
	done
fi
passed=$(wc -l <"$OUT/bochs/$name/passed")
if [ "$passed" -eq 0 ] || [ $missing -ne 0 ]; then
	[ $rc -ne 0 ] || rc=1
else
	echo "ok: $passed sub-tests passed with samples on Intel VMX (Bochs)"
fi
exit $rc
