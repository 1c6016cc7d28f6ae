# shellcheck shell=bash
# The guests of demo/in-l1.sh, which sources this after its settings
# (names, kinds, levels, vcpus, work, vms, cgroups, record_seconds): where
# each VM's files are, booting a VM and waiting for its programs, what it
# hands over (its root, its sideband and build-id cache), whether it or
# its perf broke, and stopping them all.

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
	elif [ "${kinds[$1]}" = bare ]; then
		grep -q 'guest: programs running' "$dir/guest-console.log" 2>/dev/null
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
	local i=$1 dir kernel share_args launcher=() cgroup accel
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
	bare)
		# Nothing shared: the host reads what it needs in guest memory.
		kernel=$STOCK_KERNEL/vmlinuz share_args=()
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
	# Opted in from the start by QEMU's accelerator property, or later.
	accel=kvm
	[ "${optins[$i]}" != property ] || accel+=,guest-callchains=$(level_name "${levels[$i]}")
	step "booting ${names[$i]} (-accel $accel): $kernel with a busybox initramfs and demo/workload.c"
	"${launcher[@]}" "$GUEST_QEMU" -accel "$accel" -cpu "${DEMO_GUEST_CPU:-host,-xsave}" -m 512 -smp "${vcpus[$i]}" \
		-name "demo,process=${names[$i]},debug-threads=on" \
		-display none -vga none -monitor none -nic none -no-reboot \
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

# qmp I COMMAND [ARGUMENTS]: run a QMP command (stop, cont,
# set-guest-callchains) in VM I's QEMU, print what it returns.  A VM
# stopped this way keeps its guest's kvm-clock still: its kernel sees no
# time pass.
qmp() {
	python3 "$TOP/scripts/qmp.py" "/run/${names[$1]}.qmp.sock" "${@:2}"
}
# QEMU's name of guest call chain level N (KVM_GUEST_CALLCHAINS_*).
level_name() {
	case $1 in
	0) echo off ;;
	1) echo chain ;;
	2) echo stack ;;
	*) die "no guest call chain level $1" ;;
	esac
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
