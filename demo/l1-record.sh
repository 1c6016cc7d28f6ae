# shellcheck shell=bash
# The recording of demo/in-l1.sh, which sources this after its settings
# and demo/l1-guests.sh: perf's ring for the rate, what a perf.data holds
# and lost, the events and target (one VM's QEMU, or the whole host by
# cgroup), and record_guests, which boots the guests, records them and
# says whether the recording is a good one.

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

# The recording's events and target: one VM, its QEMU with the VM's
# mode; several, the whole host, an event per VM's cgroup.
record_target() {
	local i mode
	if [ "$vms" -eq 1 ]; then
		if [ "${kinds[0]}" != fp ]; then
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

# Whether VM I is profiled from the host alone too (DEMO_AGENTLESS=both,
# the stock guest) or only (the bare guest).
agentless_vm() {
	case ${kinds[$1]}:$agentless_mode in
	bare:* | stock:both) return 0 ;;
	esac
	return 1
}

# The guest's root as the host has it for the host's own reads of VM I, in
# VM_DIR/agentless/guestmount/QEMU-PID: the guest image's files
# ($DEMOBUILD/KIND/root, as its disk mounted read-only would be), its
# kernel image in boot/, and in proc/kallsyms the guest's kernel symbols
# from that image and its memory (perf kvm kallsyms).
agentless_root() {
	local i=$1 dir root qmp_sock f
	dir=$(vm_dir "$i")/agentless qmp_sock=/run/${names[$i]}.qmp.sock
	root=$dir/guestmount/${qemus[$i]}
	mkdir -p "$root/proc" "$root/boot" "$dir/home"
	for f in "$DEMOBUILD/${kinds[$i]}/root"/*; do
		case ${f##*/} in proc | boot) ;; *) ln -s "$f" "$root/" ;; esac
	done
	ln -s "$STOCK_KERNEL/vmlinuz" "$root/boot/vmlinuz"
	step "${names[$i]}: its kernel symbols from the host alone: perf kvm kallsyms --image=vmlinuz --qmp=${qmp_sock##*/}"
	"$PERF" kvm kallsyms --image="$STOCK_KERNEL/vmlinuz" --qmp="$qmp_sock" -o "$root/proc/kallsyms" \
		>"$dir/kallsyms.log" 2>&1 ||
		why "perf kvm kallsyms could not read ${names[$i]}'s kernel symbols: $(tail -n 3 "$dir/kallsyms.log")"
}

# The host's own reads of VM I's processes and their maps, in its memory
# (perf kvm tasks -o VM_DIR/agentless/guest.data) every
# DEMO_AGENTLESS_INTERVAL ms (100) around the recording (wrapped around
# record[]), the files they map put in the build-id cache
# VM_DIR/agentless/home/.debug by their build-ids in the guest's root.
agentless_wrap() {
	local i=$1 dir qmp_sock home
	dir=$(vm_dir "$i")/agentless qmp_sock=/run/${names[$i]}.qmp.sock
	step "${names[$i]}: its processes from the host alone: perf kvm --guestmount=agentless/guestmount tasks -o agentless/guest.data --interval=$agentless_interval around the recording"
	# The recording keeps the build-id cache it had.
	home=(env -u HOME)
	[ -z "${HOME:-}" ] || home=(env HOME="$HOME")
	record=(env HOME="$dir/home" "$PERF" kvm --guestmount="$dir/guestmount" tasks
		--image="$STOCK_KERNEL/vmlinuz" --qmp="$qmp_sock" -o "$dir/guest.data"
		--interval="$agentless_interval" -- "${home[@]}" "${record[@]}")
}

# Whether the host's reads of VM I made its sideband (perf kvm tasks says
# what it read in perf-record.log).
agentless_check() {
	local dir
	dir=$(vm_dir "$1")/agentless
	if [ ! -s "$dir/guest.data" ]; then
		why "perf kvm tasks wrote no sideband of ${names[$1]}: see perf-record.log"
		return
	fi
	step "${names[$1]}: $(grep '^perf kvm tasks: [0-9]* \(reads\|files\)' "$work/perf-record.log" | tr '\n' ' ' || echo 'perf kvm tasks said nothing')"
}

# Boot the guests and record them at RATE; 0 when they all ran their
# programs, clean, the whole time and the recording lost at most max_lost%
# of its samples and nothing of a guest's sideband.  The guests' programs
# run until the host has read the guest's clock after recording (stock),
# or until the host stops the guest (fp).
record_guests() {
	local rate=$1 i dir mib record_rc started took samples lost chunks percent
	local target sidebands=() clock_files=() chunks_all=0 fetched cut level how got
	local agentless=() root how
	rm -rf "$work" /run/demo-*.sock
	mkdir -p "$work/guestmount"
	qemus=()
	started=$SECONDS
	# The stock guests record their sideband and answer for their clock.
	for i in "${!names[@]}"; do
		[ "${kinds[$i]}" != stock ] || sidebands+=("$i")
		! agentless_vm "$i" || agentless+=("$i")
	done
	# Under nested TCG a running guest slows the others' boots down a lot
	# (the two fp guests booting together took 177s, one alone about 25s):
	# each VM boots alone and waits, stopped, while the next one boots; a
	# VM stopped so keeps its guest's kvm-clock still.
	for i in "${!names[@]}"; do
		boot_and_wait "$i" || return
		[ "$vms" -eq 1 ] || qmp "$i" stop >/dev/null || { why "could not stop ${names[$i]} (QMP)"; return; }
	done
	for i in "${!names[@]}"; do
		[ "$vms" -eq 1 ] || qmp "$i" cont >/dev/null || { why "could not let ${names[$i]} go on (QMP)"; return; }
	done
	for i in "${!names[@]}"; do
		dir=$(vm_dir "$i")
		# perf kvm --guestmount wants the guest's root at
		# guestmount/<QEMU PID>: what the guest shared, or for the bare
		# guest what the host has of it.
		root=$dir/guest how=shared
		! agentless_vm "$i" || agentless_root "$i" || return
		[ "${kinds[$i]}" != bare ] || root=$dir/agentless/guestmount/${qemus[$i]} how="read from the host alone"
		ln -s "$(realpath --relative-to="$work/guestmount" "$root")" "$work/guestmount/${qemus[$i]}"
		echo "${qemus[$i]}" >"$dir/guest-qemu.pid"
		echo "${kinds[$i]}" >"$dir/demo-guest"
		echo "${names[$i]} ${kinds[$i]} ${levels[$i]} ${qemus[$i]} ${vcpus[$i]}" >>"$work/vms"
		step "${names[$i]}: guest root $how at guestmount/${qemus[$i]} ($(wc -l <"$root/proc/kallsyms") kallsyms lines)"
	done
	step "guests running after $((SECONDS - started))s"

	# The gate only now, and the stock guests opted in only now, through
	# QEMU's set-guest-callchains: once a VM is opted in, each of its
	# memslot updates waits for an expedited RCU grace period, and a
	# booting guest updates its memslots a lot (under nested TCG the
	# stock guest opted in from its start took 319 s to reach its
	# programs, 126 s not opted in: docs/measurements.md).  demo-fp of
	# DEMO_GUESTS=3 opted in from its start, with QEMU's
	# -accel kvm,guest-callchains, as a VM profiled from its start would.
	# QEMU answers for each VM's level.
	echo Y >"$knob"
	for i in "${!names[@]}"; do
		level=$(level_name "${levels[$i]}")
		case ${optins[$i]} in
		none)
			step "${names[$i]} is not opted in: its samples get the guest's instruction pointer only"
			continue
			;;
		qmp)
			qmp "$i" set-guest-callchains "{\"level\": \"$level\"}" >/dev/null ||
				die "QEMU could not opt ${names[$i]} in (set-guest-callchains $level)"
			how="set-guest-callchains $level while it runs"
			;;
		property)
			how="-accel kvm,guest-callchains=$level from its start"
			;;
		esac
		got=$(qmp "$i" query-guest-callchains) || die "query-guest-callchains failed for ${names[$i]}"
		[[ $got == *"\"level\": \"$level\""* ]] ||
			die "${names[$i]}'s QEMU says $got, not level $level"
		step "${names[$i]}: guest call chains on ($knob = $(cat "$knob"); QEMU: $how; query-guest-callchains: $got)"
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
	[ ${#sidebands[@]} -eq 0 ] && [ ${#agentless[@]} -eq 0 ] ||
		record+=(-k CLOCK_MONOTONIC --sample-identifier)
	# The host alone tells the guest's processes apart by the page table
	# each sample was taken in.
	[ ${#agentless[@]} -eq 0 ] || record+=(--guest-pgd)
	record+=(-- sleep "$record_seconds")
	for i in "${agentless[@]}"; do
		agentless_wrap "$i" || return
	done
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
	for i in "${agentless[@]}"; do
		agentless_check "$i" || return
	done
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
