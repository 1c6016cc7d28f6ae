#!/bin/bash
# Runs inside L1 (scripts/l1-run.sh): make check's L1 suite.  L1 is booted
# into the series' kernel and has /dev/kvm, a host of the kind make
# check-host is for:
#
#   tests/l1/run.sh tests   whether lib.sh's choice of L1's accelerator,
#                           one level down, would take KVM here
#                           (l1/accel-choice), then make check-host's
#                           KVM selftests and perf tests
#   tests/l1/run.sh guest   make check-host's real guest, recorded
#
# each judged here by L1's own conditions (scripts/check-host.sh with
# CHECK_HOST_PARTS).  Two boots, because under TCG they need different
# L1s: the selftests' NMI cases need a second CPU (tests/nmi-sampler sends
# each CPU's NMI to the next one, and one CPU alone takes its timer's exit
# before its NMI reaches a guest), while a Linux guest booted in an L1 of
# two CPUs did not reach its programs in 300 s, or crashed, in 3 of 3
# tries (with one L1 CPU, as make demo boots it, in 114 s): its vCPU
# kicked out of the guest by the other CPU, which TCG's nested SVM does
# not always survive.  scripts/all-tests.sh boots them so; on a host of
# its own make check-host runs all three parts in one.
#
# Writes "PASS|FAIL name" lines to $L1_RESULTS/results.txt, check-host's
# exit status to $L1_RESULTS/check-host.status and its results and logs
# to $L1_RESULTS/check-host, for the host's summary.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
RESULTS=${L1_RESULTS:-/tmp}
: >"$RESULTS/results.txt"

echo "L1: $(uname -r), $(nproc) CPUs, kvm_amd nested paging: $(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null || echo n/a)"
case ${1:-} in
tests)
	parts="selftests perf"
	# lib.sh's choice of L1's accelerator, one level down: L1 has
	# /dev/kvm and SVM, so an L1 started here would run under KVM.
	if choice=$(L1_ACCEL='' l1_accel) && [ "${choice%%$'\t'*}" = kvm ]; then
		echo "PASS l1/accel-choice" >>"$RESULTS/results.txt"
		echo "PASS l1/accel-choice: ${choice#*$'\t'}"
	else
		echo "FAIL l1/accel-choice" >>"$RESULTS/results.txt"
		echo "FAIL l1/accel-choice: L1 has /dev/kvm and SVM, and l1_accel says '$choice'"
	fi
	;;
guest) parts=guest ;;
*) die "usage: $0 tests|guest" ;;
esac

rc=0
CHECK_HOST_PARTS=$parts CHECK_HOST_OUT=$RESULTS/check-host bash "$TOP/scripts/check-host.sh" || rc=$?
echo $rc >"$RESULTS/check-host.status"
! grep -q '^FAIL' "$RESULTS/results.txt" && [ $rc -eq 0 ]
