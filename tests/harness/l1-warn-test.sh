#!/bin/bash
# Prove the L1 log check on a real boot: a WARNING injected with lkdtm inside
# L1 must fail scripts/l1-run.sh, although the command itself succeeds, and
# the report must be shown.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash "$TOP/scripts/l1-run.sh" -t 300 -n warn-test \
	sh -c 'echo WARNING >/sys/kernel/debug/provoke-crash/DIRECT; echo injected' >"$out" 2>&1
rc=$?
sed 's/^/    | /' "$out"
if [ $rc -eq 0 ]; then
	echo "l1-run passed although L1 logged a WARNING"; exit 1
fi
grep -q '^injected$' "$out" || { echo "the command did not run in L1"; exit 1; }
grep -q 'FAIL: kernel reports' "$out" && grep -q 'WARNING: .*lkdtm' "$out" || {
	echo "l1-run failed (status $rc) without showing the WARNING"; exit 1; }
echo "l1-run failed with status $rc on the injected WARNING and showed it"
