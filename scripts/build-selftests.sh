#!/bin/bash
# Build the KVM selftests that tests/l1/kvm-selftests lists, against the
# headers of our kernel build, with frame pointers in guest code.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KBUILD=${KBUILD:-$BUILD/kbuild}
SELFTESTS=$BUILD/selftests/kvm
[ -d "$KBUILD/usr/include" ] || die "no kernel headers in $KBUILD/usr/include: build the kernel first"
mkdir -p "$SELFTESTS"
mapfile -t tests < <(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests")
say "building ${#tests[@]} KVM selftests"
make -s -C "$TREE/tools/testing/selftests/kvm" -j"$(nproc)" \
	CC="ccache gcc" OUTPUT="$SELFTESTS" \
	KHDR_INCLUDES="-isystem $KBUILD/usr/include" \
	EXTRA_CFLAGS="-fno-omit-frame-pointer" \
	"${tests[@]/#/$SELFTESTS/}"
say "KVM selftests at $SELFTESTS"
