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
# Everything is written to L1's own memory (WORK, a tmpfs) and copied to
# OUTDIR, L1's 9p share of the host, at the end, whether or not it worked:
# under nested TCG on a busy host, perf writing its ring to 9p fell so far
# behind that it lost most of its samples.
#
# OUTDIR gets perf.data, guest-console.log and guestmount/PID: the guest's
# root (guest/: proc/kallsyms, proc/modules, sys/kernel/notes; for fp, the
# program and workload.maps, its /proc/PID/maps in the guest); for stock,
# guest-data/ (the guest's perf.data, tmp/guest.data, and its build-id
# cache, root/.debug) and guest-clock (OFFSET,SCALE for perf inject); and
# recording.txt, what the recording holds and lost (demo/check-output.sh
# reads it).
#
# A recording that lost more than DEMO_MAX_LOST_PERCENT (1) of its samples,
# or any event of the guest's sideband, is not drawn: the guest is booted
# and recorded again, at half the rate after lost samples, up to
# DEMO_ATTEMPTS (3) times.  DEMO_RATE (250) is the first attempt's rate.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 2 ] || die "usage: $0 OUTDIR RECORD_SECONDS"
outdir=$1 record_seconds=$2
knob=${DEMO_KNOB:-/sys/module/kvm/parameters/enable_guest_callchains}
guest=${DEMO_GUEST:-stock}
rate=${DEMO_RATE:-250}
max_lost=${DEMO_MAX_LOST_PERCENT:-1}
boot_seconds=${DEMO_BOOT_SECONDS:-300}
step() { printf '[demo/L1 %4ds] %s\n' "$SECONDS" "$*"; }
# Where OUTDIR is on the host, for messages (demo/run.sh says).
shown=${DEMO_SHOWN_OUTDIR:-$outdir}

# Not in OUTDIR: L1 shares it over 9p, which has no sockets.
clock_sock=/run/demo-clock.sock
work=${DEMO_WORK:-/tmp/demo-l1}

case "$guest" in
stock)
	kernel=$STOCK_KERNEL/vmlinuz level=2 call_graph=(--call-graph dwarf)
	# Each sample: 8 KiB of the guest's stack, its registers, the header.
	sample_kib=9
	# Debian's kernel has no 9p: the guest sends its root as a tar stream.
	share_args=(-device virtio-serial-pci
		-chardev file,id=guestroot,path="$work/guestroot.tar"
		-device virtserialport,chardev=guestroot,name=org.perf.guestroot
		-chardev socket,id=clock,path="$clock_sock",server=on,wait=off
		-device virtserialport,chardev=clock,name=org.perf.clock
		-chardev file,id=guestdata,path="$work/guestdata.tar"
		-device virtserialport,chardev=guestdata,name=org.perf.guestdata)
	record_args=(-k CLOCK_MONOTONIC --sample-identifier)
	;;
fp)
	kernel=$BZIMAGE level=1 call_graph=(-g) record_args=() sample_kib=1
	share_args=(-fsdev local,id=share,path="$work/guest",security_model=none
		-device virtio-9p-pci,fsdev=share,mount_tag=share)
	;;
*)
	die "DEMO_GUEST must be stock or fp, not '$guest'"
	;;
esac
case "$rate" in
'' | *[!0-9]*) die "DEMO_RATE must be a number of samples a second, not '$rate'" ;;
esac
[ -e "$knob" ] || die "$knob is missing: this kernel has no guest call chains (not the patched kernel?)"
[ -c /dev/kvm ] || die "no /dev/kvm here: KVM is not available (no SVM/VMX for the guest?)"
[ -s "$kernel" ] || die "no guest kernel at $kernel: run demo/deps.sh"

share=$work/guest

# perf's ring, per L1 CPU (perf record -p maps one per CPU): room for 4 s
# of samples at RATE, so that perf can fall behind that long on a busy
# L1 before the kernel drops samples; a power of two, 1 MiB at least.
ring_mib() {
	local need=$(($1 * 4 * sample_kib / 1024 + 1)) mib=1
	while [ $mib -lt $need ]; do mib=$((mib * 2)); done
	echo $mib
}

# SAMPLES LOST CHUNKS of a perf.data (demo/recording-counts.sh).
recording_counts() { bash "$TOP/demo/recording-counts.sh" "$1"; }

# A guest kernel report (the pattern the L1 log check uses): the guest
# went wrong, and its profile with it.
guest_broke() {
	tr -d '\r' <"$work/guest-console.log" 2>/dev/null | grep -qE "$KERNEL_REPORT"
}

# Whether the guest handed over its root: over 9p, or over the port.
guest_root_here() {
	if [ "$guest" = fp ]; then
		[ -s "$share/workload.maps" ]
	else
		grep -q 'guest: guest root sent' "$work/guest-console.log" 2>/dev/null
	fi
}

# The guest's root, for perf kvm --guestmount: for the stock guest, what
# it sent (kallsyms, modules, notes); its programs' files come later, by
# build id, in its build-id cache.
guest_root_unpack() {
	[ "$guest" = stock ] || return 0
	tar xf "$work/guestroot.tar" -C "$share"
}

# The stock guest's sideband and build-id cache, which it sends once the
# host is done recording (tools/guest-clock/guest-clock-offset ends with
# 'q' to the guest's clock-echo).
guest_data_fetch() {
	[ "$guest" = stock ] || return 0
	for _ in $(seq 180); do
		grep -q 'guest: guest data sent' "$work/guest-console.log" 2>/dev/null && break
		kill -0 $qemu 2>/dev/null || break
		sleep 1
	done
	rm -rf "$work/guest-data"
	mkdir -p "$work/guest-data"
	grep -q 'guest: guest data sent' "$work/guest-console.log" &&
		tar xf "$work/guestdata.tar" -C "$work/guest-data" &&
		[ -s "$work/guest-data/tmp/guest.data" ] && [ -s "$work/guest-clock" ]
}

# How often L1's KVM refused a guest the TSC rate QEMU asked for: that
# guest's timers stall (scripts/l1-run.sh says why).
tsc_refusals() { dmesg | grep -c 'TSC rate below hardware speed' || true; }

# why REASON: the attempt failed, for that reason (kept for the summary).
why() {
	step "$*"
	failure=$*
	return 1
}

# Boot the guest and record it at RATE; 0 when the guest ran its programs,
# clean, the whole time and the recording lost at most max_lost% of its
# samples and nothing of the guest's sideband.  The guest's programs run
# until the host has read the guest's clock after recording (stock), or
# until the host stops the guest (fp).  -xsave: the guest kernel finds
# XSAVE sizes inconsistent under nested TCG and warns.
record_guest() {
	local rate=$1 mib record_rc started took samples lost chunks percent refusals
	rm -rf "$work" "$clock_sock"
	mkdir -p "$work" "$share" "$work/guestmount"
	: >"$work/guest-console.log"
	refusals=$(tsc_refusals)
	step "booting the L2 guest: $kernel with a busybox initramfs and demo/workload.c"
	# debug-threads=on: perf inject finds the vCPU threads by their names;
	# process=: perf kvm names the VM by its VMM's process (--sort vm, the
	# flame graph's first level).
	qemu-system-x86_64 -accel kvm -cpu "${DEMO_GUEST_CPU:-host,-xsave}" -m 512 -smp 1 \
		-name "demo,process=demo-$guest,debug-threads=on" \
		-display none -monitor none -nic none -no-reboot \
		-kernel "$kernel" -initrd "$DEMOBUILD/$guest/initramfs.cpio.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 ${DEMO_GUEST_APPEND:-} -- $((record_seconds + 3600))" \
		"${share_args[@]}" \
		-serial file:"$work/guest-console.log" &
	qemu=$!
	started=$SECONDS
	while [ $((SECONDS - started)) -lt "$boot_seconds" ]; do
		guest_root_here && break
		kill -0 $qemu 2>/dev/null || break
		guest_broke && break
		[ "$(tsc_refusals)" -eq "$refusals" ] || break
		sleep 1
	done
	if [ "$(tsc_refusals)" -gt "$refusals" ]; then
		why "L1's KVM could not give the guest the TSC rate QEMU asked for (L1's TSC calibration is off: see L1's console.log); its timers would stall"
		return
	fi
	if guest_broke; then
		why "the guest broke while booting (a kernel report in guest-console.log)"
		return
	fi
	if ! kill -0 $qemu 2>/dev/null; then
		why "the guest's QEMU ended while the guest booted: see output.log and guest-console.log"
		return
	fi
	if ! guest_root_here || ! guest_root_unpack; then
		why "the guest did not reach its programs in ${boot_seconds}s (DEMO_BOOT_SECONDS): see guest-console.log"
		return
	fi
	# perf kvm --guestmount wants the guest's root at guestmount/<QEMU PID>.
	ln -s ../guest "$work/guestmount/$qemu"
	step "guest programs running after $((SECONDS - started))s; guest root shared at guestmount/$qemu ($(wc -l <"$share/proc/kallsyms") kallsyms lines)"

	# Only now: once on, the VM's opt-in makes each of its memslot updates
	# wait for an expedited RCU grace period, and a booting guest updates
	# its memslots a lot.  With it on from the start, the guest broke during
	# its boot more often under TCG's nested SVM (see README).
	# QEMU knows nothing of guest call chains: the administrator's tool
	# opts its VM in, through a copy of the VM's file descriptor.
	echo Y >"$knob"
	opt_in=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "$qemu" $level 2>&1) ||
		die "kvm_guest_callchains could not opt the guest in: $opt_in"
	step "guest call chains on ($knob = $(cat "$knob"); kvm_guest_callchains: $opt_in)"
	mib=$(ring_mib "$rate")
	step "recording: perf kvm --guest record ${call_graph[*]} ${record_args[*]} -e cpu-clock -F $rate -m ${mib}M -p $qemu for ${record_seconds}s"
	# perf stops at SIGINT; past its time limit it is killed.
	record=(timeout -s INT -k 30 $((record_seconds + 120))
		"$PERF" kvm --guest --guestmount="$work/guestmount" -o "$work/perf.data"
		record -q "${call_graph[@]}" "${record_args[@]}" -e cpu-clock -F "$rate" -m "${mib}M"
		-p "$qemu" -- sleep "$record_seconds")
	record_rc=0
	started=$SECONDS
	if [ "$guest" = stock ]; then
		# The guest's clock against ours, before and after recording.
		python3 "$TOP/tools/guest-clock/guest-clock-offset" ping "$clock_sock" \
			-- "${record[@]}" >"$work/guest-clock" 2>"$work/perf-record.log" ||
			record_rc=$?
	else
		"${record[@]}" >"$work/perf-record.log" 2>&1 || record_rc=$?
	fi
	took=$((SECONDS - started))
	grep -v '^\[ perf record: ' "$work/perf-record.log" || true
	# Once in about four runs here, perf.data came out unfinished (a data
	# size of 0) without a message: record again rather than draw nothing.
	if [ "$record_rc" -ne 0 ] || ! read -r samples lost chunks < <(recording_counts "$work/perf.data"); then
		cp "$work/perf-record.log" "$work/perf-record.failed.log"
		why "perf kvm record exited with status $record_rc after ${took}s and left no complete perf.data: see perf-record.log"
		return
	fi
	# Every PERF_RECORD_LOST stands for one lost sample at least.
	[ "$lost" -ge "$chunks" ] || lost=$chunks
	percent=$(awk -v s="$samples" -v l="$lost" 'BEGIN { printf "%.2f", s + l ? 100 * l / (s + l) : 0 }')
	step "recorded $samples samples in ${took}s, lost $lost ($percent%; $chunks PERF_RECORD_LOST)"
	{
		echo "rate $rate"
		echo "ring_mib $mib"
		echo "seconds $record_seconds"
		echo "took $took"
		echo "samples $samples"
		echo "lost $lost"
		echo "lost_chunks $chunks"
		echo "lost_percent $percent"
	} >"$work/recording.txt"
	if [ "$samples" -eq 0 ]; then
		why "the recording has no samples: was the guest running? See guest-console.log"
		return
	fi
	if awk -v p="$percent" -v m="$max_lost" 'BEGIN { exit !(p > m) }'; then
		lost_samples=1
		why "the recording lost $lost of $((samples + lost)) samples ($percent%, more than DEMO_MAX_LOST_PERCENT=$max_lost%): this machine is too busy or slow for ${rate} samples a second"
		return
	fi
	if ! guest_data_fetch; then
		why "the guest did not send its sideband: see guest-console.log"
		return
	fi
	if [ "$guest" = stock ]; then
		read -r _ _ chunks < <(recording_counts "$work/guest-data/tmp/guest.data") ||
			{ why "the guest's sideband (guest-data/tmp/guest.data) can't be read"; return; }
		echo "sideband_lost $chunks" >>"$work/recording.txt"
		if [ "$chunks" -ne 0 ]; then
			why "the guest's perf lost events of its sideband $chunks times: its processes would be told apart wrongly"
			return
		fi
		step "the guest's sideband is complete (no lost events)"
	fi
	# The stock guest powers off once it sent its sideband.
	if { [ "$guest" = fp ] && ! kill -0 $qemu 2>/dev/null; } || guest_broke; then
		why "the guest stopped or broke while we recorded it: see guest-console.log"
		return
	fi
	echo $qemu >"$work/guest-qemu.pid"
	echo "$guest" >"$work/demo-guest"
	stop_guest
}

qemu=
stop_guest() {
	[ -n "$qemu" ] || return 0
	kill $qemu 2>/dev/null || true
	wait $qemu 2>/dev/null || true
	qemu=
}

# Whatever happened, what there is goes to OUTDIR.
copy_out() {
	stop_guest
	[ -d "$work" ] || return 0
	cp -a "$work/." "$outdir/" 2>/dev/null ||
		step "could not copy $work to $shown"
}
trap copy_out EXIT

# The guest kernel sometimes goes wrong early, with interrupts taken while
# it has them off, under nested KVM on TCG's SVM (see README); a recording
# that lost samples on a busy machine is made again at half the rate.
attempts=${DEMO_ATTEMPTS:-3}
for attempt in $(seq "$attempts"); do
	failure="" lost_samples=0
	if record_guest "$rate"; then
		echo "attempts $attempt" >>"$work/recording.txt"
		break
	fi
	stop_guest
	for f in guest-console.log perf-record.log recording.txt; do
		[ -f "$work/$f" ] && cp "$work/$f" "$outdir/${f%.*}.failed-$attempt.${f##*.}"
	done
	[ "$attempt" -lt "$attempts" ] ||
		die "no good recording in $attempts attempts; the last: $failure (logs in $shown: guest-console.failed-$attempt.log, perf-record.failed-$attempt.log)"
	if [ "$lost_samples" = 1 ] && [ "$rate" -gt 50 ]; then
		rate=$((rate / 2))
	fi
	step "trying again ($((attempt + 1)) of $attempts) at $rate samples a second"
done
step "recorded $(du -h "$work/perf.data" | cut -f1) of perf.data: $(tr '\n' ' ' <"$work/recording.txt")"
