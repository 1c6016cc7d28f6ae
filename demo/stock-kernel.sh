#!/bin/bash
# Debian's own stock cloud kernel, installed from its package as a user
# would: linux-image-$STOCK_KERNEL_RELEASE-unsigned (config/base.conf pins
# it; the newest 6.12 cloud kernel apt knows, loudly, when Debian no longer
# serves that one), unpacked once into $STOCK_KERNEL (vmlinuz, config,
# release).  It unwinds with ORC and has no frame pointers, no 9p and
# virtio-blk as a module: the demo's guest boots it from an initramfs and
# hands its symbols over a virtio console port (demo/guest-init.sh).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

pinned=linux-image-$STOCK_KERNEL_RELEASE-unsigned
if [ -s "$STOCK_KERNEL/vmlinuz" ] && [ "$(cat "$STOCK_KERNEL/release" 2>/dev/null)" = "$STOCK_KERNEL_RELEASE" ]; then
	say "Debian's stock cloud kernel $STOCK_KERNEL_RELEASE at $STOCK_KERNEL"
	exit 0
fi
suites="Debian 12 serves its 6.12 kernels from the bookworm-security and bookworm-updates suites: have both in apt's sources (Debian's standard sources do) and run 'apt-get update'"
package=
if [ -n "$(apt-cache policy "$pinned" 2>/dev/null | sed -n 's/^ *Candidate: //p' | grep -v '(none)')" ]; then
	package=$pinned
else
	package=$(apt-cache search --names-only '^linux-image-6\.12\.[0-9.]+\+deb12-cloud-amd64-unsigned$' |
		cut -d' ' -f1 | sort -V | tail -n 1)
	[ -n "$package" ] || die "apt knows no $pinned, nor any linux-image-6.12.*+deb12-cloud-amd64-unsigned. $suites"
	say "WARNING: apt knows no $pinned (config/base.conf pins it; $suites); using $package"
fi
say "downloading $package (Debian's stock cloud kernel)"
rm -rf "$STOCK_KERNEL"
mkdir -p "$STOCK_KERNEL/deb"
(cd "$STOCK_KERNEL/deb" && apt-get download -q "$package" >/dev/null 2>&1) ||
	die "apt-get download $package failed"
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
