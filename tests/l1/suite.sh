#!/bin/bash
# make check's L1 suite, on the host: make check-host inside L1
# (tests/l1/run.sh), its selftests and perf tests in an L1 of two CPUs,
# its guest in one of one (run.sh says why), each part judged there by
# L1's conditions.  Its results go to $STAGE_RESULTS: l1/accel-choice, and
# check-host's under l1/check-host/, counted and shown by make check, not
# judged again (scripts/results.py check --nested); a part whose L1
# kernel log had a report, its tests passing, adds
# FAIL l1/kernel-log-or-boot-PART.  Exit status 0 when both parts passed
# (make check's result l1/check-host).  The guest is built here: L1 sees
# this machine's root read-only.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"

DEMO_GUEST=stock bash "$TOP/demo/guest-image.sh" ||
	echo "no guest image: check-host's guest/record will fail"
status=0
for part in tests guest; do
	dir=$OUT/l1/suite-$part
	rc=0
	if [ $part = tests ]; then
		bash "$TOP/scripts/l1-run.sh" -t 2400 -n "suite-$part" bash "$TOP/tests/l1/run.sh" $part || rc=$?
	else
		L1_SMP=1 bash "$TOP/scripts/l1-run.sh" -t 900 -n "suite-$part" bash "$TOP/tests/l1/run.sh" $part || rc=$?
	fi
	part_status=$(cat "$dir/check-host.status" 2>/dev/null || echo none)
	[ "$part_status" = 0 ] || { status=1; echo "check-host's $part part: exit status $part_status"; }
	cat "$dir/results.txt" >>"$STAGE_RESULTS" 2>/dev/null
	[ ! -s "$dir/check-host/results.txt" ] ||
		sed 's|^\([A-Z]*\) |\1 l1/check-host/|' "$dir/check-host/results.txt" >>"$STAGE_RESULTS"
	# Passing tests in a kernel whose log shows a report still fail.
	if [ $rc -ne 0 ] && [ "$part_status" = 0 ] && ! grep -q '^FAIL' "$dir/results.txt" 2>/dev/null; then
		echo "FAIL l1/kernel-log-or-boot-$part" >>"$STAGE_RESULTS"
		status=1
	fi
done
exit $status
