#!/bin/bash
# The kernel log check (scripts/check-kernel-log.sh, lib.sh's KERNEL_REPORT)
# must pass a clean log and fail every kind of kernel report, showing the
# report.  Canned logs, no boot needed; the real
# injected-WARN boot is tests/harness/l1-warn-test.sh.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0

clean='[    0.000000] Linux version 6.12.117 (root@host)
[    1.234567] kvm_amd: Nested Paging enabled
[    2.000000] kvm_amd: kvm [91]: vcpu0, guest rIP: 0x4018f8 Unhandled WRMSR(0xc0010117) = 0x0
[    2.500000] traps: perf[123] general protection fault ip:55d0c1e4 sp:7ffd2a10 error:0 in perf[55d0c000+1e000]'
printf '%s\r\n' "$clean" >"$tmp/clean"
if ! bash "$TOP/scripts/check-kernel-log.sh" "$tmp/clean" >"$tmp/out" 2>&1; then
	echo "check-kernel-log rejected a clean log:"; cat "$tmp/out"; fail=1
fi

while IFS= read -r report; do
	printf '%s\n%s\n[    3.1] Call Trace:\n' "$clean" "$report" >"$tmp/bad"
	if bash "$TOP/scripts/check-kernel-log.sh" "$tmp/bad" >"$tmp/out" 2>&1; then
		echo "check-kernel-log accepted a log with: $report"; fail=1
	elif ! grep -qF -- "$report" "$tmp/out"; then
		echo "check-kernel-log failed but did not show: $report"; fail=1
	fi
done <<'REPORTS'
[    3.0] WARNING: CPU: 1 PID: 77 at drivers/misc/lkdtm/bugs.c:123 lkdtm_WARNING+0x1a/0x20
[    3.0] WARNING: drivers/misc/lkdtm/bugs.c:164 at lkdtm_WARNING+0xc/0xf, CPU#0: sh/60
[    3.0] BUG: sleeping function called from invalid context at mm/memory.c:6000
[    3.0] WARNING: possible circular locking dependency detected
[    3.0] WARNING: suspicious RCU usage
[    3.0] BUG: KASAN: slab-out-of-bounds in perf_callchain_guest+0x40/0x100
[    3.0] kernel BUG at arch/x86/kvm/x86.c:1234!
[    3.0] Oops: general protection fault, probably for non-canonical address 0xdead000000000100
[    3.0] Kernel panic - not syncing: Fatal exception in interrupt
[    3.0] rcu: INFO: rcu_preempt self-detected stall on CPU
[    3.0] INFO: task perf:123 blocked for more than 120 seconds.
REPORTS
[ $fail -eq 0 ] && echo "check-kernel-log: clean log passes, 11 reports (WARNING in the formats of 6.12 and 7.3) fail"
exit $fail
