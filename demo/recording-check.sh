#!/bin/bash
# Whether a finished demo's recording is a good one, before anything is
# judged or reused from it (demo/check-output.sh, tests/demo/bad-use-test.sh):
#   - recording.txt (demo/in-l1.sh) says what perf recorded and lost: at
#     most MAX_LOST_PERCENT of the samples lost (DEMO_MAX_LOST_PERCENT
#     overrides it, as for demo/in-l1.sh), and nothing of the stock
#     guest's sideband;
#   - perf kvm script shows at least MIN_GUEST_SHARE_PERCENT of the
#     recording's samples as guest samples;
#   - for the stock guest, at most MAX_UNKNOWN_THREAD_PERCENT of them are
#     the unknown guest thread's (the sideband's clock and switches placed
#     the rest).  A sample within the guest clock's error of a guest
#     context switch is the unknown thread's by design; a clock that is
#     off, or a sideband that ends early, makes most of them unknown.
# The bounds, and what they were set from, are in demo/thresholds.conf;
# the checks are demo/checks.py's.
#
#   demo/recording-check.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
exec python3 "$TOP/demo/checks.py" recording "$1"
