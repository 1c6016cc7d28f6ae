#!/bin/bash
# Build the patched kernel (bzImage) out of tree: tinyconfig plus our
# fragment, merged with the kernel's own merge_config.sh, then checked: every
# option of the fragment must survive the merge.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

[ -e "$TREE/.git" ] || die "no work tree at $TREE: run 'make tree' first"
mkdir -p "$KBUILD"

kmake() { make -s -C "$TREE" O="$KBUILD" CC="ccache gcc" -j"$(nproc)" "$@"; }

merge_fragment "$KBUILD" "$TOP/config/kernel.config" kmake

say "building bzImage (ccache: $CCACHE_DIR)"
kmake bzImage
kmake headers >/dev/null
cp "$KBUILD/arch/x86/boot/bzImage" "$BZIMAGE"

# The test module: NMIs on a timer, where the bench has no PMU.  Built in a
# copy, as kbuild writes its objects beside the sources.
say "building $NMI_SAMPLER (tests/nmi-sampler)"
kmake modules
rm -rf "$(dirname "$NMI_SAMPLER")"
cp -r "$TOP/tests/nmi-sampler" "$(dirname "$NMI_SAMPLER")"
kmake M="$(dirname "$NMI_SAMPLER")" modules
[ -f "$NMI_SAMPLER" ] || die "no $NMI_SAMPLER after the build"
say "kernel $(kmake -s kernelrelease) at $BZIMAGE"
