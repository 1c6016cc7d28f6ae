#!/bin/bash
# Runs inside L1 (scripts/l1-run.sh): make check's L1 suite.  L1 is booted
# into the series' kernel and has /dev/kvm, a host of the kind make
# check-host is for.  In order:
#
#   l1/accel-choice   lib.sh's choice of L1's accelerator, one level down,
#                     would take KVM here (booting that L1, which took over
#                     400 s on the bench's nested emulation, is make
#                     l1-kvm-down's: tests/l1/kvm-down.sh)
#   make check-host   its KVM selftests, perf tests and real guest, judged
#                     here by L1's own conditions (scripts/check-host.sh)
#
# Writes "PASS|FAIL name" lines to $L1_RESULTS/results.txt, check-host's
# exit status to $L1_RESULTS/check-host.status and its results and logs
# to $L1_RESULTS/check-host, for the host's summary.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
RESULTS=${L1_RESULTS:-/tmp}
: >"$RESULTS/results.txt"

echo "L1: $(uname -r), $(nproc) CPUs, kvm_amd nested paging: $(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null || echo n/a)"
# lib.sh's choice of L1's accelerator, one level down: L1 has /dev/kvm
# and SVM, so an L1 started here runs under KVM.
if choice=$(L1_ACCEL='' l1_accel) && [ "${choice%%$'\t'*}" = kvm ]; then
	echo "PASS l1/accel-choice" >>"$RESULTS/results.txt"
	echo "PASS l1/accel-choice: ${choice#*$'\t'}"
else
	echo "FAIL l1/accel-choice" >>"$RESULTS/results.txt"
	echo "FAIL l1/accel-choice: L1 has /dev/kvm and SVM, and l1_accel says '$choice'"
fi

rc=0
CHECK_HOST_OUT=$RESULTS/check-host bash "$TOP/scripts/check-host.sh" || rc=$?
echo $rc >"$RESULTS/check-host.status"
! grep -q '^FAIL' "$RESULTS/results.txt" && [ $rc -eq 0 ]
