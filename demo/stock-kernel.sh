#!/bin/bash
# Debian's own stock cloud kernel, installed from its package as a user
# would: linux-image-$STOCK_KERNEL_RELEASE-unsigned from $STOCK_KERNEL_SUITE
# (config/base.conf pins both; apt state of its own, lib.sh's apt_suite, so
# that a host of another release fetches it too; the newest 6.12 cloud
# kernel of the suite, loudly, when Debian no longer serves that one),
# unpacked once into $STOCK_KERNEL (vmlinuz, config, release; not the
# package's System.map, a placeholder that points at the -dbg package).
# It unwinds with ORC and has no frame pointers, no 9p and virtio-blk as a
# module: the demo's guest boots it from an initramfs and hands its
# symbols over a virtio console port (demo/guest-init.sh).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

pinned=linux-image-$STOCK_KERNEL_RELEASE-unsigned
if [ -s "$STOCK_KERNEL/vmlinuz" ] && [ "$(cat "$STOCK_KERNEL/release" 2>/dev/null)" = "$STOCK_KERNEL_RELEASE" ]; then
	say "Debian's stock cloud kernel $STOCK_KERNEL_RELEASE at $STOCK_KERNEL"
	exit 0
fi
apt_suite_init "$STOCK_KERNEL/apt" "$STOCK_KERNEL_SUITE"
package=$(apt_suite_cache "$STOCK_KERNEL/apt" search --names-only \
	'^linux-image-6\.12\.[0-9.]+\+deb12-cloud-amd64-unsigned$' | cut -d' ' -f1 | sort -V |
	pick_pinned "stock cloud kernel" "$pinned") || die "$STOCK_KERNEL_SUITE serves no 6.12 cloud kernel"
say "downloading $package (Debian's stock cloud kernel)"
rm -rf "$STOCK_KERNEL/deb" "$STOCK_KERNEL/root"
mkdir -p "$STOCK_KERNEL/deb"
(cd "$STOCK_KERNEL/deb" && apt_suite "$STOCK_KERNEL/apt" download "$package" >/dev/null 2>&1) ||
	die "could not download $package from $STOCK_KERNEL_SUITE"
dpkg-deb -x "$STOCK_KERNEL"/deb/*.deb "$STOCK_KERNEL/root"
release=${package#linux-image-}
release=${release%-unsigned}
cp "$STOCK_KERNEL/root/boot/vmlinuz-$release" "$STOCK_KERNEL/vmlinuz"
cp "$STOCK_KERNEL/root/boot/config-$release" "$STOCK_KERNEL/config"
rm -rf "$STOCK_KERNEL/deb" "$STOCK_KERNEL/root"
grep -q '^CONFIG_UNWINDER_ORC=y' "$STOCK_KERNEL/config" ||
	die "$package does not unwind with ORC: not the kernel the demo is about"
echo "$release" >"$STOCK_KERNEL/release"
say "Debian's stock cloud kernel $release at $STOCK_KERNEL"
