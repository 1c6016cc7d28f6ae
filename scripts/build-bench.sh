#!/bin/bash
# Build bench/guest_callchain_bench.c into $BUILD/bench/ against the KVM
# selftest library that scripts/build-selftests.sh built (same flags as the
# kvm selftests Makefile, guest code with frame pointers).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KBUILD=${KBUILD:-$BUILD/kbuild}
SELFTESTS=$BUILD/selftests/kvm
KVM_SRC=$TREE/tools/testing/selftests/kvm
SRC=$TOP/bench/guest_callchain_bench.c
OUTDIR=$BUILD/bench
BIN=$OUTDIR/guest_callchain_bench

[ -d "$KBUILD/usr/include" ] || die "no kernel headers in $KBUILD/usr/include: run 'make build' first"
[ -f "$SELFTESTS/lib/kvm_util.o" ] || die "no KVM selftest library in $SELFTESTS/lib: run 'make selftests' first"
mapfile -t objs < <(ls "$SELFTESTS"/lib/*.o "$SELFTESTS"/lib/x86_64/*.o)
mkdir -p "$OUTDIR"

if [ -x "$BIN" ] && [ "$BIN" -nt "$SRC" ] && [ "$BIN" -nt "$SELFTESTS/lib/kvm_util.o" ]; then
	say "up to date: $BIN"
	exit 0
fi

CC=${CC:-gcc}
command -v ccache >/dev/null && CC="ccache $CC"
say "building $BIN"
# shellcheck disable=SC2086
$CC -Wall -Wstrict-prototypes -Wuninitialized -O2 -g -std=gnu99 -DCONFIG_64BIT \
	-U_FORTIFY_SOURCE -fno-builtin-memcmp -fno-builtin-memcpy -fno-builtin-memset \
	-fno-builtin-strnlen -fno-stack-protector -fno-PIE -fno-strict-aliasing \
	-march=x86-64-v2 -fno-omit-frame-pointer \
	-I"$TREE/tools/include" -I"$TREE/tools/arch/x86/include" \
	-I"$KVM_SRC/include" -I"$KVM_SRC/include/x86_64" -I"$KVM_SRC/.." \
	-isystem "$KBUILD/usr/include" \
	-pthread -no-pie "$SRC" "${objs[@]}" -ldl -o "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
say "built $BIN"
