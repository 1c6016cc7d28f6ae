#!/bin/bash
# The work tree's commits, exported again (scripts/export.sh to a scratch
# directory), are patches/ byte for byte: what is committed is what the
# tree holds.  make check's harness/export-roundtrip.  The QEMU series,
# patches/qemu, is not the kernel tree's: tests/series/qemu-series-test.sh
# checks its round trip.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
PATCHES=$scratch/patches bash "$TOP/scripts/export.sh" >/dev/null || die "scripts/export.sh failed"
if diff -ru -x qemu "$TOP/patches" "$scratch/patches" >"$scratch/diff"; then
	echo "patches/ is what the tree exports"
else
	head -n 40 "$scratch/diff"
	die "patches/ differs from what the tree exports (above)"
fi
