#!/bin/bash
# The part of 'make demo' that runs inside L1 (demo/run.sh starts it): boot
# the L2 guest of DEMO_GUEST (demo/guest-image.sh) with KVM, turn guest call
# chains on and record the guest for RECORD_SECONDS:
#   stock  Debian's stock cloud kernel, three programs without frame
#          pointers: the VM at opt-in level 2, 'perf kvm --guest record
#          --call-graph dwarf', which unwinds offline (ORC, DWARF CFI); the
#          guest's own perf records its sideband (its processes, their
#          mappings, its context switches) at the same time, with the same
#          clock (-k CLOCK_MONOTONIC), and tools/guest-clock measures how
#          the two clocks relate
#   fp     our frame-pointer kernel and program: level 1, '-g'
#
#   demo/in-l1.sh OUTDIR RECORD_SECONDS
#
# OUTDIR gets perf.data, guest-console.log and guestmount/PID: the guest's
# root (guest/: proc/kallsyms, proc/modules, sys/kernel/notes; for fp, the
# program and workload.maps, its /proc/PID/maps in the guest); for stock,
# guest-data/ (the guest's perf.data, tmp/guest.data, and its build-id
# cache, root/.debug) and guest-clock (OFFSET,SCALE for perf inject).
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 2 ] || die "usage: $0 OUTDIR RECORD_SECONDS"
outdir=$1 record_seconds=$2
knob=${DEMO_KNOB:-/sys/module/kvm/parameters/enable_guest_callchains}
guest=${DEMO_GUEST:-stock}
step() { printf '[demo/L1 %4ds] %s\n' "$SECONDS" "$*"; }

# Not in OUTDIR: L1 shares it over 9p, which has no sockets.
clock_sock=/run/demo-clock.sock

case "$guest" in
stock)
	kernel=$STOCK_KERNEL/vmlinuz level=2 call_graph=(--call-graph dwarf)
	# Debian's kernel has no 9p: the guest sends its root as a tar stream.
	share_args=(-device virtio-serial-pci
		-chardev file,id=guestroot,path="$outdir/guestroot.tar"
		-device virtserialport,chardev=guestroot,name=org.perf.guestroot
		-chardev socket,id=clock,path="$clock_sock",server=on,wait=off
		-device virtserialport,chardev=clock,name=org.perf.clock
		-chardev file,id=guestdata,path="$outdir/guestdata.tar"
		-device virtserialport,chardev=guestdata,name=org.perf.guestdata)
	record_args=(-k CLOCK_MONOTONIC --sample-identifier)
	;;
fp)
	kernel=$BZIMAGE level=1 call_graph=(-g) record_args=()
	share_args=(-fsdev local,id=share,path="$outdir/guest",security_model=none
		-device virtio-9p-pci,fsdev=share,mount_tag=share)
	;;
*)
	die "DEMO_GUEST must be stock or fp, not '$guest'"
	;;
esac
[ -e "$knob" ] || die "$knob is missing: this kernel has no guest call chains (not the patched kernel?)"
[ -c /dev/kvm ] || die "no /dev/kvm here: KVM is not available (no SVM/VMX for the guest?)"
[ -s "$kernel" ] || die "no guest kernel at $kernel: run demo/deps.sh"

share=$outdir/guest

# A guest kernel report (the pattern the L1 log check uses): the guest
# went wrong, and its profile with it.
guest_broke() {
	tr -d '\r' <"$outdir/guest-console.log" 2>/dev/null | grep -qE "$KERNEL_REPORT"
}

# Whether the guest handed over its root: over 9p, or over the port.
guest_root_here() {
	if [ "$guest" = fp ]; then
		[ -s "$share/workload.maps" ]
	else
		grep -q 'guest: guest root sent' "$outdir/guest-console.log" 2>/dev/null
	fi
}

# The guest's root, for perf kvm --guestmount: for the stock guest, what
# it sent (kallsyms, modules, notes); its programs' files come later, by
# build id, in its build-id cache.
guest_root_unpack() {
	[ "$guest" = stock ] || return 0
	tar xf "$outdir/guestroot.tar" -C "$share"
}

# The stock guest's sideband and build-id cache, which it sends once the
# host is done recording (tools/guest-clock/guest-clock-offset ends with
# 'q' to the guest's clock-echo).
guest_data_fetch() {
	[ "$guest" = stock ] || return 0
	for _ in $(seq 180); do
		grep -q 'guest: guest data sent' "$outdir/guest-console.log" 2>/dev/null && break
		kill -0 $qemu 2>/dev/null || break
		sleep 1
	done
	rm -rf "$outdir/guest-data"
	mkdir -p "$outdir/guest-data"
	grep -q 'guest: guest data sent' "$outdir/guest-console.log" &&
		tar xf "$outdir/guestdata.tar" -C "$outdir/guest-data" &&
		[ -s "$outdir/guest-data/tmp/guest.data" ] && [ -s "$outdir/guest-clock" ]
}

# Boot the guest and record it; 0 when the guest ran its workload, clean,
# the whole time.  The guest runs the workload for longer than we record,
# so that the recording starts and ends in the middle of it.  -xsave: the
# guest kernel finds XSAVE sizes inconsistent under nested TCG and warns.
record_guest() {
	rm -rf "$share" "$outdir/guestmount" "$outdir/perf.data" "$outdir/guest-console.log" \
		"$outdir/guestroot.tar" "$outdir/guestdata.tar" "$clock_sock" \
		"$outdir/guest-data" "$outdir/guest-clock"
	: >"$outdir/guest-console.log"
	mkdir -p "$share" "$outdir/guestmount"
	step "booting the L2 guest: $kernel with a busybox initramfs and demo/workload.c"
	# debug-threads=on: perf inject finds the vCPU threads by their names.
	qemu-system-x86_64 -accel kvm -cpu "${DEMO_GUEST_CPU:-host,-xsave}" -m 512 -smp 1 \
		-name demo,debug-threads=on \
		-display none -monitor none -nic none -no-reboot \
		-kernel "$kernel" -initrd "$DEMOBUILD/$guest/initramfs.cpio.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 ${DEMO_GUEST_APPEND:-} -- $((record_seconds + 60))" \
		"${share_args[@]}" \
		-serial file:"$outdir/guest-console.log" &
	qemu=$!
	for _ in $(seq 180); do
		guest_root_here && break
		kill -0 $qemu 2>/dev/null || break
		guest_broke && break
		sleep 1
	done
	if ! guest_root_here || guest_broke || ! guest_root_unpack ||
		{ [ "$guest" = fp ] && [ ! -s "$share/workload.maps" ]; }; then
		step "the guest did not get to its workload (see guest-console.log)"
		stop_guest
		return 1
	fi
	# perf kvm --guestmount wants the guest's root at guestmount/<QEMU PID>.
	ln -s ../guest "$outdir/guestmount/$qemu"
	step "guest workload running; guest root shared at guestmount/$qemu ($(wc -l <"$share/proc/kallsyms") kallsyms lines)"

	# Only now: once on, the VM's opt-in makes each of its memslot updates
	# wait for an expedited RCU grace period, and a booting guest updates
	# its memslots a lot.  With it on from the start, the guest broke during
	# its boot more often under TCG's nested SVM (see README).
	echo Y >"$knob"
	opt_in=$(ls -d /sys/kernel/debug/kvm/"$qemu"-*/guest_callchains 2>/dev/null | head -n 1)
	[ -n "$opt_in" ] || die "no /sys/kernel/debug/kvm/$qemu-*/guest_callchains: the kernel can't opt the guest in"
	echo $level >"$opt_in"
	step "guest call chains on ($knob = $(cat "$knob"), ${opt_in#/sys/kernel/debug/kvm/} = $(cat "$opt_in"))"
	step "recording: perf kvm --guest record ${call_graph[*]} ${record_args[*]} -e cpu-clock -F 250 -p $qemu for ${record_seconds}s"
	record=("$PERF" kvm --guest --guestmount="$outdir/guestmount" -o "$outdir/perf.data"
		record -q "${call_graph[@]}" "${record_args[@]}" -e cpu-clock -F 250 -p $qemu
		-- sleep "$record_seconds")
	record_rc=0
	if [ "$guest" = stock ]; then
		# The guest's clock against ours, before and after recording.
		python3 "$TOP/tools/guest-clock/guest-clock-offset" ping "$clock_sock" \
			-- "${record[@]}" >"$outdir/guest-clock" 2>"$outdir/perf-record.log" ||
			record_rc=$?
	else
		"${record[@]}" >"$outdir/perf-record.log" 2>&1 || record_rc=$?
	fi
	grep -v '^\[ perf record: ' "$outdir/perf-record.log" || true
	# Once in about four runs here, perf.data came out unfinished (a data
	# size of 0) without a message: record again rather than draw nothing.
	if [ "$record_rc" -ne 0 ] ||
		! "$PERF" kvm --guest --guestmount="$outdir/guestmount" script -F time \
			-i "$outdir/perf.data" >/dev/null 2>&1; then
		step "perf kvm record exited with status $record_rc and left no complete perf.data (see perf-record.log)"
		cp "$outdir/perf-record.log" "$outdir/perf-record.failed.log"
		stop_guest
		return 1
	fi
	if [ "$guest" = stock ] && ! guest_data_fetch; then
		step "the guest did not send its sideband (see guest-console.log)"
		stop_guest
		return 1
	fi
	# The stock guest powers off once it sent its sideband.
	if { [ "$guest" = fp ] && ! kill -0 $qemu 2>/dev/null; } || guest_broke; then
		step "the guest stopped or broke while we recorded it (see guest-console.log)"
		stop_guest
		return 1
	fi
	echo $qemu >"$outdir/guest-qemu.pid"
	echo "$guest" >"$outdir/demo-guest"
	stop_guest
}

qemu=
stop_guest() {
	[ -n "$qemu" ] || return 0
	kill $qemu 2>/dev/null || true
	wait $qemu 2>/dev/null || true
	qemu=
}
trap stop_guest EXIT

# The guest kernel sometimes goes wrong early, with interrupts taken while
# it has them off, under nested KVM on TCG's SVM (see README): try again.
attempts=${DEMO_ATTEMPTS:-3}
for attempt in $(seq "$attempts"); do
	record_guest && break
	[ "$attempt" -lt "$attempts" ] || die "the L2 guest failed $attempts times; see $outdir/guest-console.log"
	cp "$outdir/guest-console.log" "$outdir/guest-console.failed-$attempt.log"
	step "trying again ($((attempt + 1)) of $attempts)"
done
step "recorded $(du -h "$outdir/perf.data" | cut -f1) of perf.data"
