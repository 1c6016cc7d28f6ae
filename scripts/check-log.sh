#!/bin/bash
# Fail when a kernel log holds a WARNING, BUG, Oops, panic, lockdep, RCU,
# KASAN, UBSAN or KFENCE report or a hung-task or stall notice; print each
# report (with the lines that follow it) so the failure explains itself.
#
#   scripts/check-log.sh LOG
set -euo pipefail
log=${1:?usage: check-log.sh LOG}
[ -f "$log" ] || { echo "[check-log] error: no log at $log" >&2; exit 2; }

pattern='WARNING:|BUG:|kernel BUG at|Oops|Kernel panic|'
pattern+='KASAN:|UBSAN:|KFENCE:|possible recursive locking|'
pattern+='INFO: task .* blocked for more than|rcu: INFO:|self-detected stall|'
pattern+='detected stalls on CPUs|Unable to handle kernel|watchdog: BUG'

# A user task's crash ("traps: perf[1] general protection fault ip:...") is
# not a kernel report: the kernel's own faults come as an Oops.
# Strip the carriage returns the serial console adds.
hits=$(tr -d '\r' <"$log" | grep -n -E "$pattern" || true)
if [ -z "$hits" ]; then
	echo "[check-log] clean: $log"
	exit 0
fi

echo "[check-log] FAIL: kernel reports in $log:"
first=$(echo "$hits" | head -n 1 | cut -d: -f1)
echo "$hits" | head -n 20 | sed 's/^/  report at line /'
echo "[check-log] first report and what follows it:"
tr -d '\r' <"$log" | sed -n "${first},$((first + 40))p" | sed 's/^/  | /'
exit 1
