#!/bin/sh
# /init of the demo's L2 guest (a busybox initramfs, see demo/guest-image.sh).
# Shares what the host needs to symbolise its frames, runs the workload,
# powers off.
#   kernel command line: ... -- SECONDS
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /share
if mount -t 9p -o trans=virtio,version=9p2000.L share /share; then
	# The share is the guest's root as perf kvm --guestmount reads it:
	# proc/kallsyms, proc/modules and the program's file at its guest path.
	mkdir -p /share/proc /share/bin
	cat /proc/kallsyms >/share/proc/kallsyms
	cat /proc/modules >/share/proc/modules 2>/dev/null || : >/share/proc/modules
	cat /bin/workload >/share/bin/workload
	uname -r >/share/release
else
	echo "guest: no shared directory: the host gets no symbols"
fi
seconds=${1:-10}
echo "guest: running the workload for ${seconds}s"
/bin/workload "$seconds" &
pid=$!
sleep 0.2
# The workload's mappings, for perf kvm --guestmaps.  Written last: the host
# waits for this file.
cat /proc/$pid/maps >/share/workload.maps.tmp 2>/dev/null &&
	mv /share/workload.maps.tmp /share/workload.maps
wait $pid
echo "guest: done"
sync
poweroff -f
