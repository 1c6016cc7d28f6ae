#!/bin/bash
# Build the demo's L2 guest, as DEMO_GUEST (demo/run.sh) says:
#   stock  Debian's stock cloud kernel (demo/stock-kernel.sh) and three
#          programs built the way distributions build programs: -O2, no
#          frame pointers, position-independent, linked against this
#          machine's (Debian's) shared libc, which has none either:
#          demo/workload.c, and ping and pong (demo/pingpong.c); and, to
#          record the guest's sideband, our perf and its libraries, and
#          tools/guest-clock/clock-echo
#   bare   the stock guest's kernel and programs and nothing else: no perf,
#          no clock tool (make demo DEMO_AGENTLESS=1 profiles it from the
#          host alone)
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
stock | bare)
	say "building the guest programs (-O2, no frame pointers, PIE, shared libc)"
	cflags=(-O2 -g -fomit-frame-pointer -fPIE -pie)
	gcc "${cflags[@]}" -o "$dir/workload" "$TOP/demo/workload.c"
	gcc "${cflags[@]}" -DPLAYER=ping -o "$root/bin/ping" "$TOP/demo/pingpong.c"
	gcc "${cflags[@]}" -DPLAYER=pong -o "$root/bin/pong" "$TOP/demo/pingpong.c"
	linked=("$dir/workload")
	if [ "$guest" = stock ]; then
		gcc -O2 -o "$root/bin/clock-echo" "$TOP/tools/guest-clock/clock-echo.c"
		[ -x "$PERF" ] || die "no perf at $PERF: run 'make perf'"
		cp "$PERF" "$root/bin/perf"
		linked+=("$root/bin/perf")
	fi
	# The shared libraries at the paths the programs ask for.
	for lib in $(for f in "${linked[@]}"; do ldd "$f"; done |
		grep -o '/[^ ]*' | sort -u); do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
	mkdir -p "$root/root"
	;;
fp)
	say "building the guest workload (static, frame pointers)"
	gcc -static -no-pie -O2 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls \
		-o "$dir/workload" "$TOP/demo/workload.c"
	;;
*)
	die "DEMO_GUEST must be stock, bare or fp, not '$guest'"
	;;
esac

cp /bin/busybox "$root/bin/busybox"
for applet in sh mount mkdir cat cp echo sleep sync poweroff uname ls tar basename kill grep; do
	ln -s busybox "$root/bin/$applet"
done
cp "$dir/workload" "$root/bin/workload"
install -m 0755 "$TOP/demo/guest-init.sh" "$root/init"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$dir/initramfs.cpio.gz"
say "guest image at $dir/initramfs.cpio.gz"
