#!/bin/bash
# Build the demo's L2 guest, as DEMO_GUEST (demo/run.sh) says:
#   stock  Debian's stock cloud kernel (demo/stock-kernel.sh) and
#          demo/workload.c built the way distributions build programs:
#          -O2, no frame pointers, linked against this machine's (Debian's)
#          shared libc, which has none either
#   fp     our test kernel ($BZIMAGE, frame pointers, 9p) and the workload
#          built static with frame pointers
# Either way an initramfs with busybox and demo/guest-init.sh as /init, in
# $DEMOBUILD/$DEMO_GUEST: its tree (root/) is also the guest root the host
# symbolises guest user frames with.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

guest=${DEMO_GUEST:-stock}
dir=$DEMOBUILD/$guest
root=$dir/root
rm -rf "$root"
mkdir -p "$root"/{bin,sbin,proc,sys,dev,tmp,share}
case "$guest" in
stock)
	say "building the guest workload (-O2, no frame pointers, shared libc)"
	gcc -O2 -g -fomit-frame-pointer -o "$dir/workload" "$TOP/demo/workload.c"
	# The shared libraries at the paths the program asks for.
	for lib in $(ldd "$dir/workload" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	;;
fp)
	say "building the guest workload (static, frame pointers)"
	gcc -static -no-pie -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls \
		-o "$dir/workload" "$TOP/demo/workload.c"
	;;
*)
	die "DEMO_GUEST must be stock or fp, not '$guest'"
	;;
esac

cp /bin/busybox "$root/bin/busybox"
for applet in sh mount mkdir cat cp echo sleep sync poweroff uname ls tar basename; do
	ln -s busybox "$root/bin/$applet"
done
cp "$dir/workload" "$root/bin/workload"
install -m 0755 "$TOP/demo/guest-init.sh" "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$dir/initramfs.cpio.gz"
say "guest image at $dir/initramfs.cpio.gz"
