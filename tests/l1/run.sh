#!/bin/bash
# Runs inside L1 (scripts/l1-run.sh): the KVM selftests of
# tests/l1/kvm-selftests, then perf test (tests/l1/perf-test.sh).  Prints a
# line per test and writes "PASS|FAIL|SKIP name" lines to
# $L1_RESULTS/results.txt for the host's summary.  KVM selftests exit 4
# (KSFT_SKIP) when they skip.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
RESULTS=${L1_RESULTS:-/tmp}
TEST_TIMEOUT=${TEST_TIMEOUT:-300}
: >"$RESULTS/results.txt"
mkdir -p "$RESULTS/tests"

echo "L1: $(uname -r), $(nproc) CPUs, kvm_amd nested paging: $(cat /sys/module/kvm_amd/parameters/npt 2>/dev/null || echo n/a)"
[ -c /dev/kvm ] || echo "L1: WARNING: no /dev/kvm; KVM tests will skip"
# NMIs where this bench has no PMU, for guest_callchain_test's c_path_nmi.
insmod "$NMI_SAMPLER" || echo "L1: WARNING: insmod $NMI_SAMPLER failed; c_path_nmi will skip"

run_one() {
	local name=$1 start rc verdict
	shift
	start=$(date +%s)
	timeout -k 5 "$TEST_TIMEOUT" "$@" >"$RESULTS/tests/${name//\//_}.log" 2>&1
	rc=$?
	case $rc in
	0) verdict=PASS ;;
	4) verdict=SKIP ;;
	124) verdict=FAIL; echo "timed out after ${TEST_TIMEOUT}s" >>"$RESULTS/tests/${name//\//_}.log" ;;
	*) verdict=FAIL ;;
	esac
	printf '%s %s (%ds)\n' "$verdict" "$name" $(($(date +%s) - start))
	if [ $verdict != PASS ]; then
		tail -n 25 "$RESULTS/tests/${name//\//_}.log" | sed 's/^/    | /'
	fi
	echo "$verdict $name" >>"$RESULTS/results.txt"
}

while read -r t; do
	case "$t" in ''|'#'*) continue ;; esac
	run_one "kvm/$t" "$SELFTESTS/$t"
done <"$TOP/tests/l1/kvm-selftests"

# perf's own tests, the guest call chain ones among them, one result each.
start=$(date +%s)
bash "$TOP/tests/l1/perf-test.sh" >"$RESULTS/tests/perf-test.out" 2>&1
echo "perf test: $(grep -c '^PASS perf/' "$RESULTS/results.txt") passed, $(grep -c '^FAIL perf/' "$RESULTS/results.txt") failed, $(grep -c '^SKIP perf/' "$RESULTS/results.txt") skipped ($(($(date +%s) - start))s)"
grep '^FAIL perf/' "$RESULTS/results.txt" | sed 's/^/    /'

! grep -q '^FAIL' "$RESULTS/results.txt"
