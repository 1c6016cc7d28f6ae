#!/bin/bash
# qemu/*.patch, the harness's fixes to L1's QEMU, as QEMU takes patches:
# each passes QEMU's own scripts/checkpatch.pl (from the source
# scripts/qemu.sh unpacked) and is signed off; and the QEMU built from them
# says it is the version config/base.conf pins.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

checkpatch=$QEMUDIR/src/scripts/checkpatch.pl
[ -f "$checkpatch" ] || { echo "no QEMU source under $QEMUDIR/src: make check builds it (scripts/qemu.sh) first"; exit 1; }
for p in "$TOP"/qemu/*.patch; do
	name=$(basename "$p")
	# From an empty directory: checkpatch reads a directory named like a
	# patch prefix in the current one as a sign of a -p0 patch.
	if out=$(cd "$tmp" && perl "$checkpatch" "$p" 2>&1) && ! grep -q "^WARNING\|^ERROR" <<<"$out"; then
		ok "$name: QEMU's checkpatch.pl clean"
	else
		bad "$name: $(grep -E "^(WARNING|ERROR)" <<<"$out" | head -n 3)"
	fi
	grep -q '^Signed-off-by: ' "$p" && ok "$name: signed off" || bad "$name: no Signed-off-by"
done
want=${L1_QEMU_VERSION#*:}
want=${want%%+*}
if "$QEMUDIR/root/usr/bin/qemu-system-x86_64" --version | grep -q "version $want\$"; then
	ok "L1's QEMU is $want"
else
	bad "L1's QEMU: $("$QEMUDIR/root/usr/bin/qemu-system-x86_64" --version | head -n1), not $want"
fi
exit $fail
