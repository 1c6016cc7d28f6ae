#!/bin/bash
# make check's L1 suite, on the host: one L1 of two CPUs running
# tests/l1/run.sh (the accelerator L1 would choose one level down, then
# make check-host, judged there by L1's conditions).  Its results go to
# $STAGE_RESULTS: l1/accel-choice and check-host's under l1/check-host/,
# counted and shown by make check, not judged again (scripts/results.py
# check --nested); an L1 whose kernel log had a report, its tests passing,
# adds FAIL l1/kernel-log-or-boot.  Exit status 0 when check-host passed
# (make check's result l1/check-host).  The guest is built here: L1 sees
# this machine's root read-only.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"

DEMO_GUEST=stock bash "$TOP/demo/guest-image.sh" ||
	echo "no guest image: check-host's guest/record will fail"
dir=$OUT/l1/suite
rc=0
bash "$TOP/scripts/l1-run.sh" -t 2700 -n suite bash "$TOP/tests/l1/run.sh" || rc=$?
status=$(cat "$dir/check-host.status" 2>/dev/null || echo none)
[ "$status" = 0 ] || echo "check-host in L1: exit status $status"
cat "$dir/results.txt" >>"$STAGE_RESULTS" 2>/dev/null
[ ! -s "$dir/check-host/results.txt" ] ||
	sed 's|^\([A-Z]*\) |\1 l1/check-host/|' "$dir/check-host/results.txt" >>"$STAGE_RESULTS"
# Passing tests in a kernel whose log shows a report still fail.
if [ $rc -ne 0 ] && [ "$status" = 0 ] && ! grep -q '^FAIL' "$dir/results.txt" 2>/dev/null; then
	echo "FAIL l1/kernel-log-or-boot" >>"$STAGE_RESULTS"
	exit 1
fi
[ "$status" = 0 ]
