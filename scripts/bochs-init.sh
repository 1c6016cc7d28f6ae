#!/bin/sh
# PID 1 of the kernel under Bochs (see scripts/bochs-run.sh): runs /cmd
# with its output on the second serial port, says its exit status on the
# console and powers off.
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
# No tmpfs on /tmp: the initramfs is writable already, and the selftests
# sit in it at their path on the host, which may be under /tmp (a checkout
# there), where a mount would hide them.
echo "bochs-init: running /cmd" >/dev/kmsg
sh /cmd </dev/null >/dev/ttyS1 2>&1
rc=$?
echo "bochs-init: done, exit status $rc" >/dev/kmsg
poweroff -f
