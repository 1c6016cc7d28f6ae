#!/bin/bash
# KVM's Intel code, executed: guest_callchain_test on our kernel under Bochs
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

# One of each kind (a name runs every sub-test whose name contains it):
# the compiled path, 64-bit kernel and user stacks, a CR3 switch without
# exits (CR3 read live from the VMCS), compat and 32-bit PAE user code,
# real mode (no chain), stack windows, BPF, no guest state in the softirqs
# after VMX's handle_exit_irqoff(), the race; about 165 s here.
subtests=(c_path_max_stack_3 long64_4k long64_user_supervisor_pte long64_cr3_switch compat_user
	prot32_pae_user real_mode window_long64_user_supervisor_page window_compat_user bpf_stack_map
	softirq race)
run="x86/guest_callchain_test -i -p 1000000"
check_vmx='grep -qw vmx /proc/cpuinfo && [ "$(cat /sys/module/kvm_intel/parameters/ept)" = Y ] || { echo "no kvm_intel with EPT"; exit 1; }; echo "kvm_intel: ept=$(cat /sys/module/kvm_intel/parameters/ept) unrestricted_guest=$(cat /sys/module/kvm_intel/parameters/unrestricted_guest) vpid=$(cat /sys/module/kvm_intel/parameters/vpid)"'
if [ "${1:-}" = --all ]; then
	name=vmx-all
	script="$check_vmx; $run"
else
	[ $# -eq 0 ] || die "usage: $0 [--all]"
	name=vmx
	script="$check_vmx; rc=0; for t in ${subtests[*]}; do $run -t \$t || rc=1; done; exit \$rc"
fi
rc=0
bash "$TOP/scripts/bochs-run.sh" -t 1200 -n "$name" sh -c "$script" || rc=$?
# A result per sub-test (scripts/results.py), for make check's accounting
# when it runs this ($STAGE_RESULTS); every sub-test named (with --all:
# every sub-test there is) must pass, with samples: a skip is no pass.
tr -d '\r' <"$OUT/bochs/$name/output.log" |
	python3 "$TOP/scripts/results.py" ktap intel/guest_callchain_test >"$OUT/bochs/$name/results.txt"
[ -z "${STAGE_RESULTS:-}" ] || cat "$OUT/bochs/$name/results.txt" >>"$STAGE_RESULTS"
tr -d '\r' <"$OUT/bochs/$name/output.log" | grep -E '^ok [0-9]+ [a-z][^#]*: [0-9]+ samples' |
	sed -E 's/^ok [0-9]+ ([a-z0-9_]+).*/\1/' | sort -u >"$OUT/bochs/$name/passed"
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
