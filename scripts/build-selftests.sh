#!/bin/bash
# Build the KVM selftests that tests/l1/kvm-selftests lists into $SELFTESTS,
# against the headers of our kernel build, with frame pointers in guest code
# (lib.sh's selftests_make).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -d "$KBUILD/usr/include" ] || die "no kernel headers in $KBUILD/usr/include: build the kernel first"
mkdir -p "$SELFTESTS"
mapfile -t tests < <(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests")
say "building ${#tests[@]} KVM selftests"
selftests_make "$TREE" "$SELFTESTS" "${tests[@]/#/$SELFTESTS/}"
say "KVM selftests at $SELFTESTS"
