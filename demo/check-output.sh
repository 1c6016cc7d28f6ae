#!/bin/bash
# Check what 'make demo' wrote to OUTDIR: a good recording
# (demo/recording-check.sh: little lost, most of its samples guest
# samples), most guest samples with a guest call chain, most guest kernel
# samples with a complete chain to a kernel entry point and of the samples
# in the workload's hot loop with a chain to main; for the stock guest,
# its three programs told apart; known guest kernel and user call paths
# in caller -> callee order in the folded stacks, and a flame graph that
# renders in headless Chromium with those names visible, the VM its first
# level.  The bounds, and what they were set from, are in
# demo/thresholds.conf; the checks are demo/checks.py's.  What it counted
# of the stock guest's programs is left in OUTDIR/programs.txt.
#
#   demo/check-output.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
exec python3 "$TOP/demo/checks.py" output "$1"
