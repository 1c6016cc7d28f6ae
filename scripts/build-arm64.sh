#!/bin/bash
# Cross-compile, for arm64, the directories the series touches: arm64 does not
# opt in to guest call chains, and must build unchanged, with no stubs of its
# own.  Also covers kernel/bpf (its stack maps read sample call chains), and checks
# that the x86-only parts stay x86-only.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

ABUILD=$BUILD/arm64
mkdir -p "$ABUILD"
amake() {
	make -s -C "$TREE" O="$ABUILD" ARCH=arm64 CROSS_COMPILE=aarch64-linux-gnu- \
		CC="ccache aarch64-linux-gnu-gcc" -j"$(nproc)" "$@"
}

merge_fragment "$ABUILD" "$TOP/config/arm64-check.config" amake
for symbol in HAVE_KVM_GUEST_CALLCHAIN HAVE_PERF_CALLCHAIN_VCPU_HOST; do
	if grep -q "^CONFIG_$symbol=y" "$ABUILD/.config"; then
		die "arm64 selects $symbol"
	fi
done
say "building arm64 kernel/events/ kernel/bpf/ arch/arm64/kvm/ arch/arm64/kernel/"
amake kernel/events/ kernel/bpf/ arch/arm64/kvm/ arch/arm64/kernel/
say "arm64 build of the touched directories passed"
