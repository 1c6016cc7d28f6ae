#!/bin/bash
# The QEMU series (patches/qemu) as QEMU's maintainers receive it (make
# check's stage series/qemu): QEMU's scripts/checkpatch.pl on every patch,
# a "PASS|FAIL checkpatch/qemu/PATCH" line each, with checkpatch's
# complaints below a failure; and the export round trip, series/qemu-export:
# the series applied to its base (scripts/guest-qemu.sh tree) and exported
# again (scripts/guest-qemu.sh export) gives patches/qemu byte for byte.
# Results to $STAGE_RESULTS; exit status 1 if any failed.
#
# The one complaint allowed: patch 1's, "added, moved or deleted file(s)
# imported from Linux, are you using scripts/update-linux-headers.sh?".
# It is a placeholder of the kernel series' uAPI, to be replaced by that
# script's update once the kernel takes it (its changelog says so).
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"
src=$GUEST_QEMU_DIR/src
log=$(mktemp)
scratch=$(mktemp -d)
trap 'rm -rf "$log" "$scratch"' EXIT

failed=0
result() {
	echo "$1 $2" | tee -a "$STAGE_RESULTS"
	[ "$1" = PASS ] || failed=1
}

# A copy of the QEMU tree, for both checks: the one in build/ may hold
# work in progress.  The tarball downloaded before, where it is.
cp "$GUEST_QEMU_DIR"/qemu_*.orig.tar.xz "$scratch/" 2>/dev/null
GUEST_QEMU_DIR=$scratch bash "$TOP/scripts/guest-qemu.sh" tree >"$log" 2>&1 || {
	cat "$log"
	result FAIL series/qemu-export
	exit 1
}
src=$scratch/src

for p in "$TOP"/patches/qemu/0*.patch; do
	name=qemu/$(basename "$p")
	case $name in */0000-*) continue ;; esac
	"$src/scripts/checkpatch.pl" --no-tree "$p" >"$log" 2>&1
	rc=$?
	if grep -q '^linux-headers/' <(sed -n 's|^+++ b/||p' "$p") &&
		[ "$(grep -c '^\(WARNING\|ERROR\):' "$log")" = 1 ] &&
		grep -q '^WARNING: added, moved or deleted file(s) imported from Linux' "$log"; then
		rc=0
	fi
	if [ $rc -eq 0 ]; then
		result PASS "checkpatch/$name"
	else
		result FAIL "checkpatch/$name"
		sed 's/^/    | /' "$log"
	fi
done

copy=$scratch/patches
mkdir -p "$copy"
cp -r "$TOP/patches/qemu" "$copy/qemu"
if (cd "$TOP" && GUEST_QEMU_DIR=$scratch QEMU_PATCHES=$copy/qemu bash scripts/guest-qemu.sh export) >"$log" 2>&1 &&
	diff -r -u "$TOP/patches/qemu" "$copy/qemu" >>"$log"; then
	result PASS series/qemu-export
else
	result FAIL series/qemu-export
	sed 's/^/    | /' "$log" | head -n 40
fi
exit $failed
