#!/bin/bash
# The several-VM demo's bound on each VM's samples of the unknown guest
# thread (demo/demochecks/vms.py's check_vm, the bounds of
# demo/thresholds.conf): a VM that opted in is held to
# MAX_UNKNOWN_THREAD_PERCENT, one that did not (level 0, its guest's IP
# alone, so a sample inside its guest's context switch can't be placed)
# to MAX_UNKNOWN_THREAD_PERCENT_LEVEL0; each passes just under its bound
# and fails just over it, with the figure, and a level-2 VM with the
# share a level-0 VM may have fails.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

# unknown LEVEL UNKNOWN: the verdict of check_vm on a VM at LEVEL with
# UNKNOWN of its 1000 samples on the unknown guest thread, the line of it.
unknown() {
	PYTHONPATH=$TOP/demo python3 - "$1" "$2" <<'PY'
import io
import sys
from demochecks.figures import Verdicts
from demochecks.read import Vm, load_thresholds
from demochecks.vms import VmCounts, check_vm

level, unknown = int(sys.argv[1]), int(sys.argv[2])
c = VmCounts()
c.samples = c.resolved = 1000
c.unknown = unknown
out = io.StringIO()
check_vm(Verdicts(out), Vm("demo-vm", "stock", level, "75", 1), c, 2000, 2, load_thresholds())
print("".join(line for line in out.getvalue().splitlines(True) if "unknown guest thread" in line), end="")
PY
}
# case LEVEL UNKNOWN WANT: the line says WANT (grep -F).
case_of() {
	local got
	got=$(unknown "$1" "$2")
	if grep -qF "$3" <<<"$got"; then
		ok "level $1, $2 of 1000 unknown: $got"
	else
		bad "level $1, $2 of 1000 unknown: '$got', not '$3'"
	fi
}
opted=$(python3 "$TOP/demo/checks.py" threshold MAX_UNKNOWN_THREAD_PERCENT)
level0=$(python3 "$TOP/demo/checks.py" threshold MAX_UNKNOWN_THREAD_PERCENT_LEVEL0)
n=$((opted * 10)) m=$((level0 * 10))
case_of 2 "$n" "ok: demo-vm (75, stock guest, level 2): $n of its 1000 samples are the unknown guest thread's ($opted.0%; at most $opted%)"
case_of 2 $((n + 1)) "FAILED: demo-vm (75, stock guest, level 2): $((n + 1)) of its 1000 samples are the unknown guest thread's"
case_of 0 "$m" "ok: demo-vm (75, stock guest, level 0): $m of its 1000 samples are the unknown guest thread's ($level0.0%; at most $level0%)"
case_of 0 $((m + 1)) "FAILED: demo-vm (75, stock guest, level 0): $((m + 1)) of its 1000 samples are the unknown guest thread's"
case_of 2 "$m" "FAILED: demo-vm (75, stock guest, level 2): $m of its 1000 samples"
exit $fail
