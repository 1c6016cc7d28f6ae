#!/bin/sh
# PID 1 of the L1 kernel (see scripts/l1-run.sh).  The root file system is
# the host's own root, read-only over 9p; the results directory is a second,
# writable 9p share.  Runs /mnt/cmd with its output on the second serial
# port, stores its exit status in /mnt/rc and the kernel log in /mnt/dmesg,
# then reboots, which ends QEMU (-no-reboot).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp TERM=dumb LANG=C.UTF-8 L1=1

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm 2>/dev/null
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /dev/shm
mount -t tmpfs tmpfs /run
# L1 gets a /tmp of its own; if this checkout lives under the host's /tmp,
# keep it visible through the new one.
top=$(cd "$(dirname "$0")/.." && pwd)
case "$top" in
/tmp/*)
	mkdir -p /run/top
	mount --bind "$top" /run/top
	mount -t tmpfs tmpfs /tmp
	mkdir -p "$top"
	mount --bind /run/top "$top"
	;;
*)
	mount -t tmpfs tmpfs /tmp
	;;
esac
mount -t debugfs debugfs /sys/kernel/debug
# Where systemd mounts it on a host: the benchmark's counts come from KVM's
# tracepoints there (bench -U).
mount -t tracefs tracefs /sys/kernel/tracing
# The demo's VMs each run in a cgroup of their own, which perf record -G
# takes (demo/in-l1.sh).  The perf_event controller's own (v1) hierarchy:
# on cgroup2, new cgroups got no perf_event state here (perf -G failed
# with ENOENT), as nothing enables a controller the way systemd does.
[ ! -d /sys/fs/cgroup ] || mount -t cgroup -o perf_event cgroup /sys/fs/cgroup
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 results /mnt
export L1_RESULTS=/mnt
ulimit -c 0
hostname l1

# What every user task waits on, shortly before scripts/l1-run.sh would
# stop L1 for running too long (l1.deadline=, in seconds of L1's uptime):
# a command that hangs leaves where it hangs in hang.txt.  Few processes
# per task: each costs TCG a lot.
hang_report() {
	for d in /proc/[0-9]*/task/[0-9]*; do
		# a kernel thread has no program
		[ -e "$d/exe" ] || continue
		wchan='' value=''
		read -r wchan <"$d/wchan" 2>/dev/null
		while read -r key value; do
			[ "$key" != State: ] || break
		done <"$d/status"
		echo "== ${d##*/} $(tr '\0' ' ' <"$d/cmdline" 2>/dev/null)"
		echo "state: $value, wchan: $wchan"
		cat "$d/stack" 2>/dev/null
	done
}
deadline=$(sed -n 's/.*l1\.deadline=\([0-9][0-9]*\).*/\1/p' /proc/cmdline)
if [ -n "$deadline" ]; then
	(
		sleep $((deadline - $(cut -d. -f1 /proc/uptime)))
		echo "l1-init: the command still runs at ${deadline}s: what its tasks wait on goes to hang.txt" >/dev/kmsg
		hang_report >/mnt/hang.txt 2>&1
	) </dev/null >/dev/null 2>&1 &
fi

echo "l1-init: running /mnt/cmd" >/dev/kmsg
sh /mnt/cmd </dev/null >/dev/ttyS1 2>&1
echo $? >/mnt/rc.tmp
dmesg >/mnt/dmesg
mv /mnt/rc.tmp /mnt/rc
echo "l1-init: done, exit status $(cat /mnt/rc)" >/dev/kmsg
umount /mnt
sync
/bin/busybox reboot -f
