#!/bin/sh
# /init of the demo's L2 guest (a busybox initramfs, see demo/guest-image.sh).
# Starts the workload, hands the host what it needs to symbolise the
# guest's frames, and powers off when the workload is done.
#   kernel command line: ... -- SECONDS
# The host gets proc/kallsyms, proc/modules, sys/kernel/notes (the kernel's
# build-id), release and workload.maps (the workload's /proc/PID/maps), as
# perf kvm --guestmount and --guestmaps read them: over 9p when the kernel
# has it (our test kernel), else as a tar stream over the virtio console
# port org.perf.guestroot (Debian's stock kernel has no 9p).
export PATH=/bin:/sbin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
seconds=${1:-10}
echo "guest: $(uname -r), running the workload for ${seconds}s"
/bin/workload "$seconds" &
pid=$!
sleep 0.2

# collect DIR: what the host needs, under DIR, the workload's maps last.
collect() {
	mkdir -p "$1/proc" "$1/sys/kernel" "$1/bin"
	cat /proc/kallsyms >"$1/proc/kallsyms"
	cat /proc/modules >"$1/proc/modules" 2>/dev/null || : >"$1/proc/modules"
	cat /sys/kernel/notes >"$1/sys/kernel/notes" 2>/dev/null
	uname -r >"$1/release"
	cat /proc/$pid/maps >"$1/workload.maps.tmp" && mv "$1/workload.maps.tmp" "$1/workload.maps"
}

port=
for p in /sys/class/virtio-ports/*; do
	[ "$(cat "$p/name" 2>/dev/null)" = org.perf.guestroot ] && port=/dev/$(basename "$p")
done
mkdir -p /share
if mount -t 9p -o trans=virtio,version=9p2000.L share /share 2>/dev/null; then
	# The share is the guest's root as perf kvm --guestmount reads it.
	mkdir -p /share/bin
	cat /bin/workload >/share/bin/workload
	collect /share
elif [ -n "$port" ]; then
	collect /tmp/guestroot
	(cd /tmp/guestroot && tar c .) >"$port" && echo "guest: guest root sent"
else
	echo "guest: no shared directory or port: the host gets no symbols"
fi
wait $pid
echo "guest: done"
sync
poweroff -f
