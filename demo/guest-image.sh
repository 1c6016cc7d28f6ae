#!/bin/bash
# Build the demo's L2 guest: an initramfs with busybox, demo/guest-init.sh as
# /init and demo/workload.c built statically with frame pointers.  The guest
# kernel is our own bzImage (frame pointers, 9p, virtio).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

root=$DEMOBUILD/initramfs
mkdir -p "$DEMOBUILD"
say "building the guest workload (static, frame pointers)"
gcc -static -no-pie -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls \
	-o "$DEMOBUILD/workload" "$TOP/demo/workload.c"

rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,share}
cp /bin/busybox "$root/bin/busybox"
for applet in sh mount mkdir cat echo sleep sync poweroff uname ls; do
	ln -s busybox "$root/bin/$applet"
done
cp "$DEMOBUILD/workload" "$root/bin/workload"
install -m 0755 "$TOP/demo/guest-init.sh" "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$DEMOBUILD/initramfs.cpio.gz"
say "guest image at $DEMOBUILD/initramfs.cpio.gz (kernel: $BZIMAGE)"
