#!/bin/sh
# /init of the demo's L2 guest (a busybox initramfs, see scripts/l2-image.sh).
# Shares its symbols with the host, runs the workload, powers off.
#   kernel command line: ... -- SECONDS
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /share
if mount -t 9p -o trans=virtio,version=9p2000.L share /share; then
	# What the host needs to symbolise guest frames: the kernel's symbols
	# and modules, and the workload's mappings.
	cat /proc/kallsyms >/share/kallsyms
	cat /proc/modules >/share/modules
	uname -r >/share/release
fi
seconds=${1:-10}
echo "guest: running the workload for ${seconds}s"
/bin/workload "$seconds" &
pid=$!
sleep 0.2
cat /proc/$pid/maps >/share/workload.maps 2>/dev/null
wait $pid
echo "guest: done"
sync
poweroff -f
