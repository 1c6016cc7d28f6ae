#!/bin/bash
# Prove that a command hanging in L1 leaves where it hangs: scripts/l1-run.sh
# stops L1 at its time limit and shows, from hang.txt, what the command's
# tasks waited on shortly before, and from QEMU's monitor where L1's CPUs
# were (idle here, in L1's kernel).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash "$TOP/scripts/l1-run.sh" -t 72 -n hang-test sh -c 'echo started; exec sleep 1000' >"$out" 2>&1
rc=$?
sed 's/^/    | /' "$out"
[ $rc -eq 124 ] || { echo "l1-run exited with status $rc, not 124 (timed out)"; exit 1; }
grep -q '^started$' "$out" || { echo "the command did not run in L1"; exit 1; }
grep -q 'wchan: hrtimer_nanosleep' < <(grep -A1 '^  | == [0-9]* sleep 1000' "$out") || {
	echo "l1-run timed out without showing where the command slept"; exit 1; }
grep -qE "^  \| CPU 0: RIP=[0-9a-f]+ \([^ ]+ in L1's kernel\)" "$out" || {
	echo "l1-run timed out without showing where L1's CPUs were"; exit 1; }
echo "l1-run timed out with status 124 and showed where the command slept and where L1's CPUs were"
