#!/bin/bash
# Build the patched kernel (bzImage) out of tree: tinyconfig plus our
# fragment, merged with the kernel's own merge_config.sh, then checked: every
# option of the fragment must survive the merge.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KBUILD=${KBUILD:-$BUILD/kbuild}
[ -d "$TREE/.git" ] || die "no work tree at $TREE: run 'make tree' first"
mkdir -p "$KBUILD"

kmake() { make -s -C "$TREE" O="$KBUILD" CC="ccache gcc" -j"$(nproc)" "$@"; }

frag=$TOP/config/kernel.config
stamp=$KBUILD/.fragment.sha
if [ ! -f "$KBUILD/.config" ] || ! sha1sum -c --status "$stamp" 2>/dev/null; then
	say "configuring: tinyconfig + config/kernel.config"
	kmake tinyconfig >/dev/null
	"$TREE/scripts/kconfig/merge_config.sh" -m -O "$KBUILD" "$KBUILD/.config" "$frag" >/dev/null
	kmake olddefconfig >/dev/null
	# merge_config.sh only warns; a dropped option must fail the build.
	bad=0
	while IFS= read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		grep -qxF "$line" "$KBUILD/.config" || { say "config option not set: $line"; bad=1; }
	done <"$frag"
	[ $bad -eq 0 ] || die "config fragment did not survive the merge"
	sha1sum "$frag" >"$stamp"
fi

say "building bzImage (ccache: $CCACHE_DIR)"
kmake bzImage
kmake headers >/dev/null
cp "$KBUILD/arch/x86/boot/bzImage" "$BUILD/bzImage"
say "kernel $(kmake -s kernelrelease) at $BUILD/bzImage"
