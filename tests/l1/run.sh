#!/bin/bash
# Runs inside L1 (scripts/l1-run.sh): the KVM selftests of
# tests/l1/kvm-selftests, then the perf tests that need the series' kernel
# (tests/perf-test.sh).  Writes "PASS|FAIL|SKIP name" lines to
# $L1_RESULTS/results.txt for the host's summary (scripts/results.py judges
# them against tests/expected): a line per selftest program, from its exit
# status (4, KSFT_SKIP: skipped), and a line per sub-test it reports
# (kvm/PROGRAM/SUBTEST), so that a sub-test that skips while the program
# exits 0 still shows.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
RESULTS=${L1_RESULTS:-/tmp}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
: >"$RESULTS/results.txt"
mkdir -p "$RESULTS/tests"

echo "L1: $(uname -r), $(nproc) CPUs, kvm_amd nested paging: $(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null || echo n/a)"
[ -c /dev/kvm ] || echo "L1: no /dev/kvm: the KVM tests will fail"
# lib.sh's choice of L1's accelerator, one level down: L1 has /dev/kvm and
# SVM, so an L1 started here would run under KVM.
if choice=$(L1_ACCEL= l1_accel) && [ "${choice%%$'\t'*}" = kvm ]; then
	echo "PASS l1/accel-choice" >>"$RESULTS/results.txt"
	echo "PASS l1/accel-choice: ${choice#*$'\t'}"
else
	echo "FAIL l1/accel-choice" >>"$RESULTS/results.txt"
	echo "FAIL l1/accel-choice: L1 has /dev/kvm and SVM, and l1_accel says '$choice'"
fi
# NMIs where this bench has no PMU, for guest_callchain_test's c_path_nmi.
insmod "$NMI_SAMPLER" || echo "L1: insmod $NMI_SAMPLER failed: c_path_nmi will skip, and fail the run"

run_one() {
	local name=$1 log start rc verdict
	shift
	log=$RESULTS/tests/${name//\//_}.log
	start=$(date +%s)
	timeout -k 5 "$TEST_TIMEOUT" "$@" >"$log" 2>&1
	rc=$?
	case $rc in
	0) verdict=PASS ;;
	4) verdict=SKIP ;;
	124) verdict=FAIL; echo "timed out after ${TEST_TIMEOUT}s" >>"$log" ;;
	*) verdict=FAIL ;;
	esac
	python3 "$TOP/scripts/results.py" ktap "$name" <"$log" >"$log.results"
	printf '%s %s (%ds, exit status %d; sub-tests: %s)\n' "$verdict" "$name" \
		$(($(date +%s) - start)) $rc "$(python3 "$TOP/scripts/results.py" count "$log.results")"
	if [ $verdict != PASS ] || grep -q '^[FS]' "$log.results"; then
		grep '^[FS]' "$log.results" | sed 's/^/    /'
		tail -n 25 "$log" | sed 's/^/    | /'
	fi
	{
		echo "$verdict $name"
		cat "$log.results"
	} >>"$RESULTS/results.txt"
}

while read -r t; do
	case "$t" in ''|'#'*) continue ;; esac
	run_one "kvm/${t#*/}" "$SELFTESTS/$t"
done <"$TOP/tests/l1/kvm-selftests"

start=$(date +%s)
STAGE_RESULTS=$RESULTS/results.txt bash "$TOP/tests/perf-test.sh" l1/perf >"$RESULTS/tests/perf-test.out" 2>&1
rc=$?
echo "perf test (in L1): exit status $rc, $(python3 "$TOP/scripts/results.py" count "$RESULTS/results.txt" l1/perf) ($(($(date +%s) - start))s)"
grep '^[FS][A-Z]* l1/perf/' "$RESULTS/results.txt" | sed 's/^/    /'
[ $rc -eq 0 ] || tail -n 20 "$RESULTS/tests/perf-test.out" | sed 's/^/    | /'

! grep -q '^FAIL' "$RESULTS/results.txt" && [ $rc -eq 0 ]
