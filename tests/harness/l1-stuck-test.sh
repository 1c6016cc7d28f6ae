#!/bin/bash
# Prove that scripts/l1-run.sh stops an L1 that QEMU keeps stuck in a guest
# and boots it once more (a RETRY result), then gives up with status 126: a made-up probe
# (L1_STUCK_PROBE), polled every 3 s, sees CPU 0 in a guest with L1's
# timer pending at every poll, armed anew at the first three (a CPU that
# takes its ticks, merely seen with one pending: not stuck), then always
# with the same count (stuck: three polls more).
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/scripts/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/probe" <<PROBE
#!/bin/sh
echo poll >>"$tmp/polls"
n=\$(wc -l <"$tmp/polls")
count=26096
[ "\$n" -gt 3 ] || count=\$((1000 + n))
echo "CPU 0: RIP=00005555cbe44420 CPL=3 GDT=fffffe56bc694000, outside L1's kernel with L1's timer (vector 236) pending; timer armed with \$count"
PROBE
chmod +x "$tmp/probe"
# Its retry is recorded in a file of its own, not make check's.
L1_RETRIES=$tmp/retries L1_STUCK_PROBE=$tmp/probe L1_STUCK_POLL=3 \
	bash "$TOP/scripts/l1-run.sh" -t 300 -n stuck-test sh -c 'echo started; exec sleep 1000' >"$tmp/out" 2>&1
rc=$?
sed 's/^/    | /' "$tmp/out"
results=$OUT/l1/stuck-test
[ $rc -eq 126 ] || { echo "l1-run exited with status $rc, not 126 (stuck twice)"; exit 1; }
[ "$(grep -c "^\[l1-run\] booting L1 for" "$tmp/out")" -eq 2 ] || { echo "L1 was not booted exactly twice"; exit 1; }
grep -q "booting L1 once more" "$tmp/out" || { echo "l1-run did not say it boots L1 once more"; exit 1; }
polls=$(wc -l <"$tmp/polls")
[ "$polls" -eq 9 ] || { echo "$polls polls, not 9 (the first boot stopped at the sixth, the first three arming the timer anew; the second at the third)"; exit 1; }
grep -q "^  | CPU 0: RIP=00005555cbe44420 CPL=3 GDT=fffffe56bc694000, outside L1's kernel with L1's timer (vector 236) pending; timer armed with 26096$" "$tmp/out" ||
	{ echo "l1-run did not show where the CPU was stuck"; exit 1; }
[ -s "$results/stuck-1/console.log" ] && [ -s "$results/stuck-1/stuck" ] ||
	{ echo "no first boot's logs in $results/stuck-1"; exit 1; }
grep -q "^\[check-kernel-log\] clean: $results/stuck-1/console.log" "$tmp/out" ||
	{ echo "the first boot's kernel log was not checked"; exit 1; }
grep -q "^RETRY l1/stuck-test # QEMU ran a guest with L1's timer pending for 6s: booted again" "$tmp/retries" &&
	[ "$(wc -l <"$tmp/retries")" -eq 1 ] ||
	{ echo "the second boot is not recorded as one RETRY result: $(cat "$tmp/retries" 2>/dev/null)"; exit 1; }
echo "l1-run let a CPU that took its ticks run on, stopped L1 stuck in a guest, booted it once more, checked both kernel logs, recorded the retry, and gave up with status 126"
