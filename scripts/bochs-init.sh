#!/bin/sh
# PID 1 of the kernel under Bochs (see scripts/bochs-run.sh): runs /cmd
# with its output on the second serial port, says its exit status on the
# console and powers off.
export PATH=/bin HOME=/tmp
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug
mount -t tmpfs tmpfs /tmp
echo "bochs-init: running /cmd" >/dev/kmsg
sh /cmd </dev/null >/dev/ttyS1 2>&1
rc=$?
echo "bochs-init: done, exit status $rc" >/dev/kmsg
poweroff -f
