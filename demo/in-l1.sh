#!/bin/bash
# The part of 'make demo' that runs inside L1 (demo/run.sh starts it): boot
# the L2 guests with KVM, turn guest call chains on and record the guests
# for RECORD_SECONDS.  The guests (demo/guest-image.sh):
#   stock  Debian's stock cloud kernel, three programs without frame
#          pointers: the VM at opt-in level 2, recorded with --call-graph
#          dwarf, which unwinds offline (ORC, DWARF CFI); the guest's own
#          perf records its sideband (its processes, their mappings, its
#          context switches) at the same time, with the same clock (-k
#          CLOCK_MONOTONIC), and tools/guest-clock measures how the two
#          clocks relate
#   fp     our frame-pointer kernel and program: level 1, recorded -g
#
# DEMO_GUESTS=1 (the default) runs DEMO_GUEST alone and records its QEMU
# (perf record -p), the host's side of it too (perf kvm --host --guest):
# QEMU's host samples, and the host call chain of the vCPU thread in its
# guest samples.  DEMO_GUESTS=2 or 3 runs several VMs at once, each in
# a cgroup of its own as libvirt runs them, and records the whole host
# (perf record -a) with one event per VM's cgroup, each with the call-graph
# mode its VM opted in for:
#   demo-stock  the stock guest at level 2 (--call-graph dwarf)
#   demo-fp     the fp guest at level 1 (-g)                     (3 only)
#   demo-off    the stock guest, not opted in: its samples get the
#               guest's instruction pointer and nothing of its memory;
#               its sideband is recorded as demo-stock's is
#
#   demo/in-l1.sh OUTDIR RECORD_SECONDS
#
# Everything is written to L1's own memory (WORK, a tmpfs) and copied to
# OUTDIR, L1's 9p share of the host, at the end, whether or not it worked:
# under nested TCG on a busy host, perf writing its ring to 9p fell so far
# behind that it lost most of its samples.
#
# OUTDIR gets perf.data, recording.txt (what the recording holds and lost,
# demo/check-output.sh reads it), perf-record.log, machines (perf kvm's
# --host --guest or --guest, what was recorded), host-kallsyms (L1's, with
# the host's side), vms (a line per VM:
# NAME GUEST LEVEL QEMU-PID VCPUS) and guestmount/QEMU-PID, a link to each VM's
# guest root.  Each VM's files are in OUTDIR itself with one VM, else in
# OUTDIR/NAME: guest-console.log, guest-qemu.pid, demo-guest, and guest/,
# the guest's root (proc/kallsyms, proc/modules, sys/kernel/notes; for
# fp, the program and workload.maps, its /proc/PID/maps in the guest); for
# stock, guest-data/ (the guest's perf.data, tmp/guest.data, and its
# build-id cache, root/.debug) and guest-clock (OFFSET,SCALE for perf
# inject).
#
# A recording that lost more than MAX_LOST_PERCENT (demo/thresholds.conf,
# 1; DEMO_MAX_LOST_PERCENT overrides it) of its samples,
# or any event of the guest's sideband, is not drawn: the guests are booted
# and recorded again, at half the rate after lost samples, up to
# DEMO_ATTEMPTS (3) times.  DEMO_RATE (250) is the first attempt's rate.
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 2 ] || die "usage: $0 OUTDIR RECORD_SECONDS"
outdir=$1 record_seconds=$2
knob=${DEMO_KNOB:-/sys/module/kvm/parameters/enable_guest_callchains}
guest=${DEMO_GUEST:-stock}
rate=${DEMO_RATE:-250}
max_lost=$(python3 "$TOP/demo/checks.py" threshold MAX_LOST_PERCENT)	# demo/thresholds.conf, or DEMO_MAX_LOST_PERCENT
boot_seconds=${DEMO_BOOT_SECONDS:-300}
step() { printf '[demo/L1 %4ds] %s\n' "$SECONDS" "$*"; }
# Where OUTDIR is on the host, for messages (demo/run.sh says).
shown=${DEMO_SHOWN_OUTDIR:-$outdir}
work=${DEMO_WORK:-/tmp/demo-l1}

case "$guest" in
stock) level=2 ;;
fp) level=1 ;;
*) die "DEMO_GUEST must be stock or fp, not '$guest'" ;;
esac
case "${DEMO_GUESTS:-1}" in
1) names=("demo-$guest") kinds=("$guest") levels=("$level") vcpus=(1) ;;
2) names=(demo-stock demo-off) kinds=(stock stock) levels=(2 0) vcpus=(2 1) ;;
3) names=(demo-stock demo-fp demo-off) kinds=(stock fp stock) levels=(2 1 0) vcpus=(2 1 1) ;;
*) die "DEMO_GUESTS must be 1, 2 or 3, not '${DEMO_GUESTS:-}'" ;;
esac
vms=${#names[@]}
case "$rate" in
'' | *[!0-9]*) die "DEMO_RATE must be a number of samples a second, not '$rate'" ;;
esac
[ -e "$knob" ] || die "$knob is missing: this kernel has no guest call chains (not the patched kernel?)"
[ -c /dev/kvm ] || die "no /dev/kvm here: KVM is not available (no SVM/VMX for the guest?)"
for kind in "${kinds[@]}"; do
	[ "$kind" = fp ] || [ -s "$STOCK_KERNEL/vmlinuz" ] ||
		die "no guest kernel at $STOCK_KERNEL/vmlinuz: run demo/deps.sh"
done
# Each VM of several runs in its cgroup, as libvirt runs VMs; the
# recording's events each count in one of them (perf record -G).
cgroups=/sys/fs/cgroup
[ "$vms" -eq 1 ] || [ -e "$cgroups/cgroup.procs" ] ||
	die "no cgroup file system at $cgroups (a kernel without CONFIG_CGROUPS?): several VMs are recorded per cgroup"

# vm_dir I: where VM I's files are: WORK itself when it is alone.
vm_dir() {
	if [ "$vms" -eq 1 ]; then
		echo "$work"
	else
		echo "$work/${names[$1]}"
	fi
}
# Not in OUTDIR: L1 shares it over 9p, which has no sockets.
clock_sock() { echo "/run/${names[$1]}.clock.sock"; }

# A stock guest's sample: 8 KiB of the guest's stack, its registers, the
# header; an fp guest's: its chain.
sample_kib=1
for kind in "${kinds[@]}"; do
	[ "$kind" = fp ] || sample_kib=9
done
# perf's ring, per L1 CPU (perf record -p or -a maps one per CPU): room
# for 4 s of samples at RATE, so that perf can fall behind that long on a
# busy L1 before the kernel drops samples; a power of two, 1 MiB at least.
ring_mib() {
	local need=$(($1 * 4 * sample_kib / 1024 + 1)) mib=1
	while [ $mib -lt $need ]; do mib=$((mib * 2)); done
	echo $mib
}

# SAMPLES LOST CHUNKS of a perf.data (demo/recording-counts.sh).
recording_counts() { bash "$TOP/demo/recording-counts.sh" "$1"; }

# A guest kernel report (the pattern the L1 log check uses) on VM I's
# console: the guest went wrong, and its profile with it.
guest_broke() {
	grep -qE "$KERNEL_REPORT" < <(tr -d '\r' <"$(vm_dir "$1")/guest-console.log" 2>/dev/null)
}

# Whether VM I handed over its root: over 9p, or over the port.
guest_root_here() {
	local dir
	dir=$(vm_dir "$1")
	if [ "${kinds[$1]}" = fp ]; then
		[ -s "$dir/guest/workload.maps" ]
	else
		grep -q 'guest: guest root sent' "$dir/guest-console.log" 2>/dev/null
	fi
}

# The guest's root, for perf kvm --guestmount: for the stock guest, what
# it sent (kallsyms, modules, notes); its programs' files come later, by
# build id, in its build-id cache.
guest_root_unpack() {
	local dir
	dir=$(vm_dir "$1")
	[ "${kinds[$1]}" = stock ] || return 0
	tar xf "$dir/guestroot.tar" -C "$dir/guest"
}

# The stock guest's sideband and build-id cache, which it sends once the
# host is done recording (tools/guest-clock/guest-clock-offset ends with
# 'q' to the guest's clock-echo).
guest_data_fetch() {
	local dir
	dir=$(vm_dir "$1")
	[ "${kinds[$1]}" = stock ] || return 0
	for _ in $(seq 180); do
		grep -q 'guest: guest data sent' "$dir/guest-console.log" 2>/dev/null && break
		kill -0 "${qemus[$1]}" 2>/dev/null || break
		sleep 1
	done
	rm -rf "$dir/guest-data"
	mkdir -p "$dir/guest-data"
	grep -q 'guest: guest data sent' "$dir/guest-console.log" &&
		tar xf "$dir/guestdata.tar" -C "$dir/guest-data" &&
		[ -s "$dir/guest-data/tmp/guest.data" ] && [ -s "$dir/guest-clock" ]
}

# Whether VM I's perf record crashed in the guest: it sent its core
# (demo/guest-init.sh); then say where, from the core, in perf-crash.txt
# (the guest runs this perf and its libraries, at the same paths).
guest_perf_crashed() {
	local dir core
	dir=$(vm_dir "$1")
	core=$(ls "$dir"/guest-data/tmp/core.* 2>/dev/null | head -n 1)
	[ -n "$core" ] || return 1
	gdb -batch -q -ex 'thread apply all bt' "$PERF" "$core" \
		>"$dir/perf-crash.txt" 2>&1 || true
	grep -m 8 '^#' "$dir/perf-crash.txt" | sed 's/^/    /'
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

# Start VM I's QEMU, in its cgroup when there are several.  -xsave: the
# guest kernel finds XSAVE sizes inconsistent under nested TCG and warns.
# debug-threads=on: perf inject finds the vCPU threads by their names;
# process=: perf kvm names the VM by its VMM's process (--sort vm, the
# flame graph's first level).
boot_vm() {
	local i=$1 dir kernel share_args launcher=() cgroup
	dir=$(vm_dir "$i")
	mkdir -p "$dir/guest"
	: >"$dir/guest-console.log"
	case "${kinds[$i]}" in
	stock)
		kernel=$STOCK_KERNEL/vmlinuz
		# Debian's kernel has no 9p: the guest sends its root as a tar
		# stream.
		share_args=(-device virtio-serial-pci
			-chardev file,id=guestroot,path="$dir/guestroot.tar"
			-device virtserialport,chardev=guestroot,name=org.perf.guestroot
			-chardev socket,id=clock,path="$(clock_sock "$i")",server=on,wait=off
			-device virtserialport,chardev=clock,name=org.perf.clock
			-chardev file,id=guestdata,path="$dir/guestdata.tar"
			-device virtserialport,chardev=guestdata,name=org.perf.guestdata)
		;;
	fp)
		kernel=$BZIMAGE
		share_args=(-fsdev local,id=share,path="$dir/guest",security_model=none
			-device virtio-9p-pci,fsdev=share,mount_tag=share)
		;;
	esac
	[ -s "$kernel" ] || die "no guest kernel at $kernel"
	if [ "$vms" -gt 1 ]; then
		cgroup=$cgroups/${names[$i]}
		mkdir -p "$cgroup"
		# shellcheck disable=SC2016
		launcher=(sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$cgroup")
	fi
	step "booting ${names[$i]}: $kernel with a busybox initramfs and demo/workload.c"
	"${launcher[@]}" qemu-system-x86_64 -accel kvm -cpu "${DEMO_GUEST_CPU:-host,-xsave}" -m 512 -smp "${vcpus[$i]}" \
		-name "demo,process=${names[$i]},debug-threads=on" \
		-display none -monitor none -nic none -no-reboot \
		-kernel "$kernel" -initrd "$DEMOBUILD/${kinds[$i]}/initramfs.cpio.gz" \
		-append "console=ttyS0 loglevel=4 panic=-1 ${DEMO_GUEST_APPEND:-} -- $((record_seconds + 3600))" \
		"${share_args[@]}" \
		-qmp unix:"/run/${names[$i]}.qmp.sock",server=on,wait=off \
		-serial file:"$dir/guest-console.log" &
	qemus[i]=$!
}

# Boot VM I and wait until it runs its programs; 0 when it does.
boot_and_wait() {
	local i=$1 started refusals
	refusals=$(tsc_refusals)
	boot_vm "$i"
	started=$SECONDS
	while [ $((SECONDS - started)) -lt "$boot_seconds" ]; do
		guest_root_here "$i" && break
		kill -0 "${qemus[$i]}" 2>/dev/null && ! guest_broke "$i" || break
		[ "$(tsc_refusals)" -eq "$refusals" ] || break
		sleep 1
	done
	if [ "$(tsc_refusals)" -gt "$refusals" ]; then
		why "L1's KVM could not give a guest the TSC rate QEMU asked for (L1's TSC calibration is off: see L1's console.log); its timers would stall"
		return
	fi
	if guest_broke "$i"; then
		why "${names[$i]} broke while booting (a kernel report in its guest-console.log)"
		return
	fi
	if ! kill -0 "${qemus[$i]}" 2>/dev/null; then
		why "${names[$i]}'s QEMU ended while the guest booted: see output.log and its guest-console.log"
		return
	fi
	if ! guest_root_here "$i" || ! guest_root_unpack "$i"; then
		why "${names[$i]} did not reach its programs in ${boot_seconds}s (DEMO_BOOT_SECONDS): see its guest-console.log"
		return
	fi
	step "${names[$i]}: guest programs running after $((SECONDS - started))s"
}

# qmp I COMMAND: run a QMP command (stop, cont) in VM I's QEMU.  A VM
# stopped this way keeps its guest's kvm-clock still: its kernel sees no
# time pass.
qmp() {
	python3 "$TOP/scripts/qmp.py" "/run/${names[$1]}.qmp.sock" "$2" >/dev/null
}

# The recording's events and target: one VM, its QEMU with the VM's
# mode; several, the whole host, an event per VM's cgroup.
record_target() {
	local i mode
	if [ "$vms" -eq 1 ]; then
		if [ "${kinds[0]}" = stock ]; then
			echo --call-graph dwarf -e cpu-clock -p "${qemus[0]}"
		else
			echo -g -e cpu-clock -p "${qemus[0]}"
		fi
		return
	fi
	for i in "${!names[@]}"; do
		# Level 2 gives the guest's registers and stack to unwind; a VM
		# that did not opt in gives its IP whatever the mode.
		mode=fp
		[ "${levels[$i]}" != 2 ] || mode=dwarf
		printf -- '-e cpu-clock/call-graph=%s/ ' "$mode"
	done
	echo "-a -G $(
		IFS=,
		echo "${names[*]}"
	)"
}

# Boot the guests and record them at RATE; 0 when they all ran their
# programs, clean, the whole time and the recording lost at most max_lost%
# of its samples and nothing of a guest's sideband.  The guests' programs
# run until the host has read the guest's clock after recording (stock),
# or until the host stops the guest (fp).
record_guests() {
	local rate=$1 i dir mib record_rc started took samples lost chunks percent
	local target sidebands=() clock_files=() chunks_all=0 fetched cut
	rm -rf "$work" /run/demo-*.sock
	mkdir -p "$work/guestmount"
	qemus=()
	started=$SECONDS
	# The stock guests record their sideband and answer for their clock.
	for i in "${!names[@]}"; do
		[ "${kinds[$i]}" = fp ] || sidebands+=("$i")
	done
	# Under nested TCG a running guest slows the others' boots down a lot
	# (the two fp guests booting together took 177s, one alone about 25s):
	# each VM boots alone and waits, stopped, while the next one boots; a
	# VM stopped so keeps its guest's kvm-clock still.
	for i in "${!names[@]}"; do
		boot_and_wait "$i" || return
		[ "$vms" -eq 1 ] || qmp "$i" stop || { why "could not stop ${names[$i]} (QMP)"; return; }
	done
	for i in "${!names[@]}"; do
		[ "$vms" -eq 1 ] || qmp "$i" cont || { why "could not let ${names[$i]} go on (QMP)"; return; }
	done
	for i in "${!names[@]}"; do
		dir=$(vm_dir "$i")
		# perf kvm --guestmount wants the guest's root at
		# guestmount/<QEMU PID>.
		ln -s "$(realpath --relative-to="$work/guestmount" "$dir/guest")" "$work/guestmount/${qemus[$i]}"
		echo "${qemus[$i]}" >"$dir/guest-qemu.pid"
		echo "${kinds[$i]}" >"$dir/demo-guest"
		echo "${names[$i]} ${kinds[$i]} ${levels[$i]} ${qemus[$i]} ${vcpus[$i]}" >>"$work/vms"
		step "${names[$i]}: guest root shared at guestmount/${qemus[$i]} ($(wc -l <"$dir/guest/proc/kallsyms") kallsyms lines)"
	done
	step "guests running after $((SECONDS - started))s"

	# Only now: once on, a VM's opt-in makes each of its memslot updates
	# wait for an expedited RCU grace period, and a booting guest updates
	# its memslots a lot.  With it on from the start, the guest broke during
	# its boot more often under TCG's nested SVM (see README).
	# QEMU knows nothing of guest call chains: the administrator's tool
	# opts its VM in, through a copy of the VM's file descriptor.
	echo Y >"$knob"
	for i in "${!names[@]}"; do
		if [ "${levels[$i]}" -eq 0 ]; then
			step "${names[$i]} is not opted in: its samples get the guest's instruction pointer only"
			continue
		fi
		opt_in=$(python3 "$KVM_GUEST_CALLCHAINS_TOOL" "${qemus[$i]}" "${levels[$i]}" 2>&1) ||
			die "kvm_guest_callchains could not opt ${names[$i]} in: $opt_in"
		step "${names[$i]}: guest call chains on ($knob = $(cat "$knob"); kvm_guest_callchains: $opt_in)"
	done
	mib=$(ring_mib "$rate")
	read -r -a target <<<"$(record_target)"
	# One VM: its QEMU's host samples too, and guest samples with the host
	# call chain of their vCPU thread (perf kvm --host --guest), for the
	# picture of the whole vCPU thread.
	machines=(--guest)
	[ "$vms" -ne 1 ] || machines=(--host --guest)
	echo "${machines[*]}" >"$work/machines"
	# The host kernel's symbols, for the report on another machine: perf
	# finds no kallsyms of this kernel's build id there.
	[ "$vms" -ne 1 ] || cp /proc/kallsyms "$work/host-kallsyms"
	step "recording: perf kvm ${machines[*]} record ${target[*]} -F $rate -m ${mib}M for ${record_seconds}s"
	# perf stops at SIGINT; past its time limit it is killed.  Before it
	# samples it reads the host's and each guest's kallsyms, tens of
	# seconds each under TCG on a slow machine (over 100s for two
	# guests).  The stock guests' clocks are read with the same clock
	# (-k CLOCK_MONOTONIC), and their sidebands need sample IDs.
	record=(timeout -s INT -k 30 $((record_seconds + 120 * (vms + 1)))
		"$PERF" kvm "${machines[@]}" --guestmount="$work/guestmount" -o "$work/perf.data"
		record -q "${target[@]}" -F "$rate" -m "${mib}M")
	[ ${#sidebands[@]} -eq 0 ] || record+=(-k CLOCK_MONOTONIC --sample-identifier)
	record+=(-- sleep "$record_seconds")
	# Each stock guest's clock against ours, before and after recording:
	# guest-clock-offset runs the recording, within one another's for
	# several guests, each printing its guest's OFFSET,SCALE.  It times
	# the guest's CPUIDs by their VM exits (cpuid): a round trip over the
	# clock's serial port takes 5-15 ms here, and the offset's error (half
	# of that) put up to one sample in five on the wrong side of a guest
	# context switch.
	for i in "${sidebands[@]}"; do
		clock_files+=("$(vm_dir "$i")/guest-clock")
		# shellcheck disable=SC2016
		record=(sh -c 'out=$1 sock=$2 pid=$3 perf=$4; shift 4; exec python3 "$0" cpuid "$sock" "$pid" --perf "$perf" -- "$@" >"$out"'
			"$TOP/tools/guest-clock/guest-clock-offset" "${clock_files[-1]}" "$(clock_sock "$i")" "${qemus[$i]}" "$PERF"
			"${record[@]}")
	done
	record_rc=0
	started=$SECONDS
	"${record[@]}" >"$work/perf-record.log" 2>&1 || record_rc=$?
	took=$((SECONDS - started))
	grep -v '^\[ perf record: ' "$work/perf-record.log" || true
	# A perf.data perf can't read (a data size of 0: perf record writes
	# the header's sizes last, ignores a failure to, and exits 0) fails
	# the attempt.  That happened in one run of four when perf wrote to
	# the 9p share; since the recording goes to L1's tmpfs, no run has
	# needed a second attempt (make check allows one).
	if [ "$record_rc" -ne 0 ] || ! read -r samples lost chunks < <(recording_counts "$work/perf.data"); then
		cp "$work/perf-record.log" "$work/perf-record.failed.log"
		# A guest that crashed takes its QEMU, and the recording, with it.
		for i in "${!names[@]}"; do
			if guest_broke "$i"; then
				why "${names[$i]}'s kernel crashed while we recorded it (then perf kvm record exited with status $record_rc): see its guest-console.log"
				return
			fi
		done
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
		echo "cpus $(nproc)"
		echo "vcpus $(IFS=+; echo $((${vcpus[*]})))"
		echo "took $took"
		echo "samples $samples"
		echo "lost $lost"
		echo "lost_chunks $chunks"
		echo "lost_percent $percent"
	} >"$work/recording.txt"
	if [ "$samples" -eq 0 ]; then
		why "the recording has no samples: were the guests running? See guest-console.log"
		return
	fi
	if awk -v p="$percent" -v m="$max_lost" 'BEGIN { exit !(p > m) }'; then
		lost_samples=1
		why "the recording lost $lost of $((samples + lost)) samples ($percent%, more than DEMO_MAX_LOST_PERCENT=$max_lost%): this machine is too busy or slow for ${rate} samples a second"
		return
	fi
	for i in "${sidebands[@]}"; do
		dir=$(vm_dir "$i")
		fetched=0
		guest_data_fetch "$i" || fetched=$?
		if guest_perf_crashed "$i"; then
			why "${names[$i]}'s perf record crashed in the guest; its sideband is cut short: where, in $dir/perf-crash.txt"
			return
		fi
		if [ $fetched -ne 0 ]; then
			why "${names[$i]} did not send its sideband: see its guest-console.log"
			return
		fi
		read -r _ _ chunks < <(recording_counts "$dir/guest-data/tmp/guest.data") ||
			{ why "${names[$i]}'s sideband (guest-data/tmp/guest.data) can't be read"; return; }
		chunks_all=$((chunks_all + chunks))
		if [ "$chunks" -ne 0 ]; then
			echo "sideband_lost $chunks_all" >>"$work/recording.txt"
			why "${names[$i]}'s perf lost events of its sideband $chunks times: its processes would be told apart wrongly"
			return
		fi
		# A process whose maps perf gave up reading (--proc-map-timeout).
		cut=$(python3 "$TOP/demo/maps-cut.py" "$dir/guest-data/tmp/guest.data") ||
			{ why "${names[$i]}'s sideband (guest-data/tmp/guest.data) can't be read"; return; }
		if [ -n "$cut" ]; then
			why "${names[$i]}'s perf gave up reading the maps of $(echo $cut) (PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT: --proc-map-timeout too short for this guest): their samples would fall on no thread"
			return
		fi
		step "${names[$i]}'s sideband is complete (no lost events, every process's maps read whole)"
	done
	[ ${#sidebands[@]} -eq 0 ] || echo "sideband_lost $chunks_all" >>"$work/recording.txt"
	# The stock guest powers off once it sent its sideband.
	for i in "${!names[@]}"; do
		if { [ "${kinds[$i]}" = fp ] && ! kill -0 "${qemus[$i]}" 2>/dev/null; } || guest_broke "$i"; then
			why "${names[$i]} stopped or broke while we recorded it: see its guest-console.log"
			return
		fi
	done
	stop_guests
}

qemus=()
stop_guests() {
	local pid
	for pid in "${qemus[@]}"; do
		kill "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	qemus=()
}

# Whatever happened, what there is goes to OUTDIR.
copy_out() {
	stop_guests
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
	if record_guests "$rate"; then
		echo "attempts $attempt" >>"$work/recording.txt"
		break
	fi
	stop_guests
	for f in perf-record.log recording.txt; do
		[ -f "$work/$f" ] && cp "$work/$f" "$outdir/${f%.*}.failed-$attempt.${f##*.}"
	done
	for i in "${!names[@]}"; do
		f=$(vm_dir "$i")/guest-console.log to=guest-console
		[ "$vms" -eq 1 ] || to=$to-${names[$i]}
		[ -f "$f" ] && cp "$f" "$outdir/$to.failed-$attempt.log"
	done
	[ "$attempt" -lt "$attempts" ] ||
		die "no good recording in $attempts attempts; the last: $failure (logs in $shown: guest-console*.failed-$attempt.log, perf-record.failed-$attempt.log)"
	if [ "$lost_samples" = 1 ] && [ "$rate" -gt 50 ]; then
		rate=$((rate / 2))
	fi
	step "trying again ($((attempt + 1)) of $attempts) at $rate samples a second"
done
step "recorded $(du -h "$work/perf.data" | cut -f1) of perf.data: $(tr '\n' ' ' <"$work/recording.txt")"
