#!/bin/bash
# Build the benchmark into $BENCHBUILD: guest_callchain_bench (bench/*.c but
# host_clock.c) against the KVM selftest library that
# scripts/build-selftests.sh built (the kvm selftests Makefile's flags, guest
# code with frame pointers), and host_clock, the small program bench/run.sh
# runs on the host beside QEMU.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

KVM_SRC=$TREE/tools/testing/selftests/kvm
BIN=$BENCHBUILD/guest_callchain_bench
mapfile -t srcs < <(ls "$TOP"/bench/*.c | grep -v '/host_clock\.c$')

[ -d "$KBUILD/usr/include" ] || die "no kernel headers in $KBUILD/usr/include: run 'make build' first"
[ -f "$SELFTESTS/lib/perf_sampler.o" ] || die "no KVM selftest library in $SELFTESTS/lib: run 'make selftests' first"
mapfile -t objs < <(ls "$SELFTESTS"/lib/*.o "$SELFTESTS"/lib/x86/*.o)
mkdir -p "$BENCHBUILD"

CC=${CC:-gcc}
command -v ccache >/dev/null && CC="ccache $CC"

# $1 is newer than every other argument: nothing to do.
up_to_date() {
	local bin=$1 f
	[ -x "$bin" ] || return 1
	shift
	for f in "$@"; do
		[ "$bin" -nt "$f" ] || return 1
	done
}

if up_to_date "$BIN" "${srcs[@]}" "$TOP/bench/bench.h" "${objs[@]}"; then
	say "up to date: $BIN"
else
	say "building $BIN"
	# shellcheck disable=SC2086
	$CC -Wall -Wstrict-prototypes -Wuninitialized -O2 -g -std=gnu99 -DCONFIG_64BIT \
		-D_GNU_SOURCE -U_FORTIFY_SOURCE -fno-builtin-memcmp -fno-builtin-memcpy \
		-fno-builtin-memset -fno-builtin-strnlen -fno-stack-protector -fno-PIE \
		-fno-strict-aliasing -march=x86-64-v2 -fno-omit-frame-pointer \
		-I"$TREE/tools/include" -I"$TREE/tools/arch/x86/include" \
		-I"$KVM_SRC/include" -I"$KVM_SRC/include/x86" -I"$KVM_SRC/.." \
		-isystem "$KBUILD/usr/include" \
		-pthread -no-pie "${srcs[@]}" "${objs[@]}" -ldl -o "$BIN.tmp"
	mv "$BIN.tmp" "$BIN"
fi
$CC -Wall -O2 -g -o "$BENCHBUILD/host_clock" "$TOP/bench/host_clock.c"
say "built $BIN and $BENCHBUILD/host_clock"
