#!/bin/sh
# /init of the demo's L2 guest (a busybox initramfs, see demo/guest-image.sh).
#   kernel command line: ... -- SECONDS
# With 9p (our test kernel, the fp guest): runs the workload for SECONDS and
# shares proc/kallsyms, proc/modules, sys/kernel/notes, release, bin/workload
# and workload.maps (its /proc/PID/maps), as perf kvm --guestmount and
# --guestmaps read them, then powers off when the workload is done.
# With virtio console ports instead (Debian's stock kernel has no 9p):
#   - starts perf record of the guest's sideband (dummy event, context
#     switches, -k CLOCK_MONOTONIC, build ids of every mapped file), waits
#     until it records (its answer to a ping), then the programs: workload, and ping, which starts pong, for at most
#     SECONDS: they are stopped once the host is done;
#   - sends proc/kallsyms, proc/modules, sys/kernel/notes and release as a
#     tar stream on port org.perf.guestroot;
#   - answers the host's clock readings on port org.perf.clock (clock-echo)
#     until the host says it is done;
#   - stops the programs and perf and sends its perf.data (tmp/guest.data) and build-id
#     cache (root/.debug) as a tar stream on port org.perf.guestdata, then
#     powers off.
# With neither (the bare guest, demo/guest-image.sh): runs the programs,
# says so on its console and gives the host nothing; with "bench" on its
# command line, the workload alone, its rounds a second on the console.
export PATH=/bin:/sbin HOME=/root
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
seconds=${1:-10}
echo "guest: $(uname -r), running the programs for ${seconds}s"

# The virtio console port of that name, if there is one.
port() {
	for p in /sys/class/virtio-ports/*; do
		[ "$(cat "$p/name" 2>/dev/null)" = "$1" ] && echo "/dev/$(basename "$p")"
	done
}

# collect DIR: what the host needs, under DIR.
collect() {
	mkdir -p "$1/proc" "$1/sys/kernel" "$1/bin"
	cat /proc/kallsyms >"$1/proc/kallsyms"
	cat /proc/modules >"$1/proc/modules" 2>/dev/null || : >"$1/proc/modules"
	cat /sys/kernel/notes >"$1/sys/kernel/notes" 2>/dev/null
	uname -r >"$1/release"
}

# The demo's programs (ping starts pong): the host is done recording.
stop_programs() {
	for p in /proc/[0-9]*; do
		case "$(cat "$p/comm" 2>/dev/null)" in
		workload | ping | pong) kill "${p#/proc/}" 2>/dev/null ;;
		esac
	done
}

finish() {
	echo "guest: done"
	sync
	poweroff -f
}

mkdir -p /share
if mount -t 9p -o trans=virtio,version=9p2000.L share /share 2>/dev/null; then
	# The share is the guest's root as perf kvm --guestmount reads it.
	/bin/workload "$seconds" &
	pid=$!
	sleep 0.2
	mkdir -p /share/bin
	cat /bin/workload >/share/bin/workload
	collect /share
	cat /proc/$pid/maps >/share/workload.maps.tmp && mv /share/workload.maps.tmp /share/workload.maps
	wait $pid
	finish
fi

root_port=$(port org.perf.guestroot)
clock_port=$(port org.perf.clock)
data_port=$(port org.perf.guestdata)
if [ -z "$root_port" ] || [ -z "$clock_port" ] || [ -z "$data_port" ]; then
	# The bare guest: nothing here gives the host anything; it reads what
	# it needs in guest memory.  The programs run until the host stops the
	# guest, or for SECONDS.  With "bench" on the command line
	# (bench/agentless-l1.sh), the workload alone, a second at a time, each
	# second's rounds on the console: the guest's own measure of its speed.
	if grep -qw bench /proc/cmdline; then
		echo "guest: programs running, nothing shared with the host"
		while :; do /bin/workload 1; done
	fi
	/bin/workload "$seconds" >/dev/null &
	/bin/ping "$seconds" >/dev/null &
	sleep 0.2
	echo "guest: programs running, nothing shared with the host"
	wait
	finish
fi

# A perf that crashes leaves its core (tmp/core.perf.PID), sent with the
# data: the host prints where it crashed.
ulimit -c unlimited
echo /tmp/core.%e.%p >/proc/sys/kernel/core_pattern
# A 4 MiB ring: the guest's perf may wait for the CPU behind the programs.
# 30 s to read each process's maps, not perf's 500 ms: a nested TCG guest
# can take longer, and a process whose maps were cut has its samples on no
# thread (the host checks: demo/maps-cut.py).
# perf answers a ping on its control FIFO only from its main loop, once it
# has read the processes that ran before it and enabled its event: the
# programs start, and the host is told to record (the guest root below),
# only then.  In an L1 of two CPUs that took 11 s after perf started: a
# host that recorded meanwhile had samples no sideband event could place.
/bin/busybox mkfifo /tmp/perf-ctl /tmp/perf-ack
perf record -q -a -e dummy --switch-events --sample-identifier --buildid-all \
	--proc-map-timeout 30000 -k CLOCK_MONOTONIC -m 4M -o /tmp/guest.data \
	--control fifo:/tmp/perf-ctl,/tmp/perf-ack 2>/tmp/perf-record.log &
perf=$!
exec 8<>/tmp/perf-ctl 9<>/tmp/perf-ack
echo ping >&8
# busybox ash's read has -t
# shellcheck disable=SC3045
if read -r -t 300 ack <&9 && [ "$ack" = ack ]; then
	echo "guest: perf record of the sideband runs"
else
	echo "guest: perf record did not answer its ping in 300 s: its sideband may start late"
fi
exec 8>&- 9<&-
/bin/workload "$seconds" >/dev/null &
/bin/ping "$seconds" >/dev/null &
clock-echo "$clock_port" &
echo=$!
sleep 0.2
collect /tmp/guestroot
(cd /tmp/guestroot && tar c .) >"$root_port" && echo "guest: guest root sent"

# The programs run until the host is done: it has recorded and read our
# clock again, however long that took on a busy machine.
wait $echo
stop_programs
kill -INT $perf 2>/dev/null || echo "guest: perf record had ended before it was stopped"
wait $perf
echo "guest: perf record: status $?: $(cat /tmp/perf-record.log)"
files="tmp/guest.data $(cd / && ls -d root/.debug tmp/core.* 2>/dev/null | tr '\n' ' ')"
# shellcheck disable=SC2086
(cd / && tar c $files) >"$data_port" && echo "guest: guest data sent: $files"
finish
