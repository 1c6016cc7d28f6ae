#!/bin/bash
# Fail when a kernel log holds a kernel report (lib.sh's KERNEL_REPORT:
# WARNING, BUG, Oops, panic, lockdep, RCU, KASAN, UBSAN, KFENCE, hung task,
# stall); print each report with the lines that follow it, so the failure
# explains itself.  l1-run.sh runs it on every L1 log.
#
#   scripts/check-kernel-log.sh LOG
set -euo pipefail
. "$(dirname "$0")/lib.sh"
log=${1:?usage: check-kernel-log.sh LOG}
[ -f "$log" ] || die "no log at $log"

# Strip the carriage returns the serial console adds.
hits=$(tr -d '\r' <"$log" | grep -n -E "$KERNEL_REPORT" || true)
if [ -z "$hits" ]; then
	say "clean: $log"
	exit 0
fi

say "FAIL: kernel reports in $log:"
first=$(echo "$hits" | head -n 1 | cut -d: -f1)
echo "$hits" | head -n 20 | sed 's/^/  report at line /'
say "first report and what follows it:"
tr -d '\r' <"$log" | sed -n "${first},$((first + 40))p" | sed 's/^/  | /'
exit 1
