#!/bin/bash
# make check-vms: several VMs at once, make demo's whole path.  Two stock
# guests in one L1 (DEMO_GUESTS=2: one switched on by QMP's
# set-guest-callchains at level 2 with two vCPUs, one not opted in),
# recorded together for 8 s in one attempt, told apart
# (demo/check-vms.sh); then that recording given the wrong sidebands
# (tests/demo/vms-bad-sideband-test.sh).  make check left it out when the
# bench's nested guests became too slow for CI's time (about 17 minutes
# here: docs/measurements.md); perf test's 'Guest machines' cases check
# several VMs' samples told apart on any host.
#
#   tests/demo/vms-check.sh [OUTDIR]     (default build/out/demo-vms)
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
out=${1:-$OUT/demo-vms}
rc=0
if DEMO_ATTEMPTS=1 DEMO_GUESTS=2 DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$out" &&
	bash "$TOP/demo/check-vms.sh" "$out"; then
	echo "PASS demo/vms"
else
	echo "FAIL demo/vms"
	rc=1
fi
if [ $rc -ne 0 ]; then
	echo "FAIL demo/vms-bad (no recording to give the wrong sidebands)"
elif bash "$TOP/tests/demo/vms-bad-sideband-test.sh" "$out"; then
	echo "PASS demo/vms-bad"
else
	echo "FAIL demo/vms-bad"
	rc=1
fi
exit $rc
