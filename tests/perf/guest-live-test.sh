#!/bin/bash
# perf kvm kallsyms and perf kvm tasks against a live guest (make check's
# perf/guest-live): Debian's stock cloud kernel (demo/stock-kernel.sh)
# booted with KASLR from an initramfs of this host's static busybox, under
# the harness's QEMU (with KVM where L1 would have it, else TCG; nothing
# of the series' kernel needed), its QMP socket the only way in.  The
# guest prints on its serial console its own /proc/kallsyms' checksum,
# line count and every 500th line, and each process's /proc/PID/stat and
# maps; perf kvm kallsyms, given the image and the socket, must write the
# same file, byte for byte, and perf kvm tasks --maps list the same
# processes (pid and name; a page table for each user process, none for
# kernel threads) with the same maps (one process runs from a second
# mount, one from a file deleted since).  Then the bad uses: another
# kernel's image (not in guest memory), an image without a relocation
# table or BTF, no such socket, files that are no kernel: a one-line
# reason each, a non-zero exit, no symbols or tasks and no file left for
# -o.  Then perf kvm tasks --maps again and again on a guest that starts
# and ends processes all the time: lists that hold together, or a reason.
# Last, the same checks as the first on Debian's cloud kernel of the base
# series (scripts/orc-image.sh), whose kallsyms layout and structures are
# 7.3's.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
image=$STOCK_KERNEL/vmlinuz
[ -s "$image" ] || die "no $image: demo/stock-kernel.sh fetches it"
busybox=$(command -v busybox) || die "no busybox: 'make deps' installs busybox-static"
work=$(mktemp -d)
qemu_pid=
cleanup() {
	[ -z "$qemu_pid" ] || kill "$qemu_pid" 2>/dev/null
	rm -rf "$work"
}
trap cleanup EXIT
# perf kvm tasks -o puts the guest's vDSO into a build-id cache of our own
# ($HOME/.debug).
export HOME=$work/home
fail=0
bad() { echo "FAIL: $*"; fail=1; }

# An initramfs of this host's static busybox and the /init below.
mkdir -p "$work/root/bin" "$work/root/dev" "$work/root/proc" "$work/root/tmp"
cp "$busybox" "$work/root/bin/busybox"
for applet in sh mount cat sleep mkfifo mkdir chmod rm; do
	ln -s busybox "$work/root/bin/$applet"
done
cat >"$work/root/init" <<'EOF'
#!/bin/sh
export PATH=/bin:/sbin
mount -t proc proc /proc
# Background jobs take their input from /dev/null.
mount -t devtmpfs dev /dev
cat /proc/kallsyms >/tmp/kallsyms
echo "GUEST-KALLSYMS $(busybox md5sum </tmp/kallsyms | busybox cut -c1-32) $(busybox wc -l </tmp/kallsyms)"
busybox awk 'NR % 500 == 1 { print "GUEST-SYM " $0 }' /tmp/kallsyms
# Processes that stay, one of them run from another mount, one from a
# file deleted since; then every process's stat and maps, with builtins only (no process that is gone
# when perf reads the list).
mkfifo /tmp/fifo
sleep 100000 &
cat /tmp/fifo &
sh -c 'sleep 100001; :' &
mkdir -p /mnt
mount -t tmpfs tmp /mnt
mkdir /mnt/sub
cat /bin/busybox >/mnt/sub/busybox
chmod +x /mnt/sub/busybox
/mnt/sub/busybox sleep 100002 &
# And one whose file is deleted once it runs: "(deleted)" in its maps.
cat /bin/busybox >/tmp/busybox
chmod +x /tmp/busybox
/tmp/busybox sleep 100003 &
sleep 1
rm /tmp/busybox
for p in /proc/[0-9]*; do
	read -r l <"$p/stat" && echo "GUEST-STAT $l"
	while read -r l; do
		echo "GUEST-MAP ${p#/proc/} $l"
	done <"$p/maps"
done
echo GUEST-READY
# Booted with "churn": processes start and exit all the time from now on.
if grep -q churn /proc/cmdline; then
	for _ in 1 2; do
		while :; do sh -c 'sleep 0; :'; done &
	done
fi
wait
EOF
chmod +x "$work/root/init"
(cd "$work/root" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$work/initramfs.cpio.gz"

# As L1 runs: with KVM where this host's CPU virtualizes, else TCG.
IFS=$'\t' read -r accel why < <(l1_accel)
case $accel in
kvm) accel_args=(-accel kvm -cpu host) ;;
*) accel_args=(-accel tcg -cpu max) ;;
esac

# boot IMAGE WHAT [ARG]: boot IMAGE with the initramfs (ARG added to the
# kernel's command line), its QMP socket at $work/qmp and its console at
# $work/console, until it has printed all.
boot() {
	local image=$1 what=$2 arg=${3:-}
	rm -f "$work/qmp" "$work/console"
	say "booting $what under QEMU, $accel ($why)"
	"$L1_QEMU" -L "$L1_QEMU_DATA/qemu" -L "$L1_QEMU_DATA/seabios" "${accel_args[@]}" -m 512M -smp 1 \
		-no-reboot -display none -vga none -monitor none -nic none \
		-kernel "$image" -initrd "$work/initramfs.cpio.gz" -append "console=ttyS0 panic=-1 $arg" \
		-qmp unix:"$work/qmp",server=on,wait=off -serial file:"$work/console" 2>"$work/qemu.log" &
	qemu_pid=$!
	for _ in $(seq 240); do
		grep -q GUEST-READY "$work/console" 2>/dev/null && break
		kill -0 "$qemu_pid" 2>/dev/null || break
		sleep 1
	done
	grep -q GUEST-READY "$work/console" 2>/dev/null ||
		die "the guest did not print its symbols and tasks in 240 s: $(tail -n 5 "$work/console" "$work/qemu.log" 2>/dev/null)"
}

# shut_down: stop the guest.
shut_down() {
	kill "$qemu_pid" 2>/dev/null
	wait "$qemu_pid" 2>/dev/null
	qemu_pid=
}

# check_kallsyms IMAGE: perf kvm kallsyms writes the guest's /proc/kallsyms.
check_kallsyms() {
	local image=$1 sum lines got missing=0 checked=0 addr type name
	read -r _ sum lines < <(grep -a '^GUEST-KALLSYMS ' "$work/console" | tr -d '\r')
	say "the guest's /proc/kallsyms: $lines lines, md5 $sum"
	if ! "$PERF" kvm kallsyms --image "$image" --qmp "$work/qmp" -o "$work/kallsyms" 2>"$work/perf.log"; then
		bad "perf kvm kallsyms failed: $(tail -n 3 "$work/perf.log")"
		return
	fi
	cat "$work/perf.log"
	got=$(md5sum <"$work/kallsyms" | cut -c1-32)
	say "perf kvm kallsyms: $(wc -l <"$work/kallsyms") lines, md5 $got"
	while read -r _ addr type name; do
		checked=$((checked + 1))
		grep -qx "$addr $type $name" "$work/kallsyms" || {
			missing=$((missing + 1))
			[ $missing -gt 5 ] || echo "    not in perf's: $addr $type $name"
		}
	done < <(grep -a '^GUEST-SYM ' "$work/console" | tr -d '\r')
	say "of $checked of the guest's symbols (every 500th), perf's file lacks $missing"
	[ "$checked" -gt 100 ] || bad "the guest printed $checked of its symbols"
	[ "$missing" -eq 0 ] || bad "perf kvm kallsyms lacks $missing of the guest's symbols"
	[ "$got" = "$sum" ] || bad "perf kvm kallsyms wrote another file than the guest's /proc/kallsyms"
}

# check_tasks IMAGE: perf kvm tasks --maps lists the processes and maps
# of the guest's /proc (tests/perf/guest-tasks-compare.py).
check_tasks() {
	local image=$1 start
	start=$(date +%s%N)
	if ! "$PERF" kvm tasks --image "$image" --qmp "$work/qmp" --maps >"$work/tasks" 2>"$work/tasks.log"; then
		bad "perf kvm tasks failed: $(tail -n 3 "$work/tasks.log")"
		return
	fi
	say "perf kvm tasks --maps: $(grep -c '^ *[0-9]' "$work/tasks") tasks, $(grep -c "^$(printf '\t')" "$work/tasks") maps in $((($(date +%s%N) - start) / 1000000)) ms"
	grep -a '^GUEST-\(STAT\|MAP\) ' "$work/console" | tr -d '\r' >"$work/proc"
	python3 "$TOP/tests/perf/guest-tasks-compare.py" "$work/proc" "$work/tasks" || fail=1
}

# check_sideband IMAGE [pti]: perf kvm tasks -o, reading the guest for 2 s,
# writes a guest sideband with the guest's user processes (FORK, COMM),
# their executable mappings (MMAP2; the vDSO's with the build-id of its
# image, which goes into the build-id cache, one of our own here) and, in
# its header, the times each
# process's page table was seen its own: perf's own dump of the file
# against the guest's /proc and perf kvm tasks' page tables
# (tests/perf/guest-sideband-compare.py); with pti, a guest booted with
# pti=on: two page tables per process, the second where its user space
# runs.
check_sideband() {
	local image=$1 pti=${2:-} vdso
	rm -rf "$work/guest.data" "$HOME"
	if ! "$PERF" kvm tasks --image "$image" --qmp "$work/qmp" -o "$work/guest.data" \
		--interval 100 -- sleep 2 >"$work/sideband.out" 2>"$work/sideband.log"; then
		bad "perf kvm tasks -o failed: $(tail -n 3 "$work/sideband.log")"
		return
	fi
	say "perf kvm tasks -o: $(sed -n 's/^perf kvm tasks: //p' "$work/sideband.log" | paste -sd ';')"
	[ ! -s "$work/sideband.out" ] || bad "perf kvm tasks -o printed on its output: $(head -n 2 "$work/sideband.out")"
	if ! "$PERF" report -D -i "$work/guest.data" >"$work/sideband.dump" 2>"$work/sideband.dump.log" ||
		! "$PERF" report --header-only -I -i "$work/guest.data" >"$work/sideband.header" 2>>"$work/sideband.dump.log"; then
		bad "perf report can't read perf kvm tasks -o's file: $(tail -n 3 "$work/sideband.dump.log")"
		return
	fi
	# The vDSO image in the cache: its build-id, as perf reads it.
	vdso=$(find "$HOME/.debug/[vdso]" -name vdso 2>/dev/null | head -n 1)
	if [ -z "$vdso" ]; then
		bad "perf kvm tasks -o put no vDSO into the build-id cache: $(ls "$HOME/.debug" 2>&1 | head -c 200)"
		vdso=none
	else
		vdso=$("$PERF" buildid-list -i "$vdso" 2>/dev/null | awk '{ print $1; exit }')
		say "the guest's vDSO in the build-id cache: ${vdso:-no build-id}"
	fi
	python3 "$TOP/tests/perf/guest-sideband-compare.py" "$work/proc" "$work/tasks" \
		"$work/sideband.dump" "$work/sideband.header" "${vdso:-none}" $pti || fail=1
	check_inject
}

# check_inject: perf inject --guest-data takes the sideband into a host
# recording (-k CLOCK_MONOTONIC, the sideband's clock), whose VM is a
# stand-in for QEMU: a process whose thread is named as QEMU names its
# vCPU threads ("CPU 0/KVM").  The output's header must have the
# sideband's address spaces, given that process as their VM and the same
# times, and its guest COMM records must be there.
check_inject() {
	local vm
	if ! "$PERF" record -q -k CLOCK_MONOTONIC --sample-identifier -e cpu-clock \
		-o "$work/host.data" -- sh -c "printf 'CPU 0/KVM' >/proc/self/comm; echo \$\$ >'$work/vm.pid'
			i=0; while [ \$i -lt 20000 ]; do i=\$((i + 1)); done" 2>"$work/inject.log" ||
		! vm=$(cat "$work/vm.pid") ||
		! "$PERF" inject -i "$work/host.data" -o "$work/host.guest" \
			--guest-data="$work/guest.data,$vm" 2>>"$work/inject.log" ||
		! "$PERF" report --header-only -I -i "$work/host.guest" >"$work/inject.header" 2>>"$work/inject.log" ||
		! "$PERF" script --show-task-events -i "$work/host.guest" >"$work/inject.script" 2>>"$work/inject.log"; then
		bad "perf inject --guest-data of the sideband failed: $(tail -n 3 "$work/inject.log")"
		return
	fi
	grep "^#   VM " "$work/sideband.header" | sed "s/^#   VM 0 /#   VM $vm /" >"$work/want.as"
	if ! grep "^#   VM " "$work/inject.header" | cmp -s - "$work/want.as"; then
		bad "perf inject --guest-data: the address spaces are not the sideband's, VM $vm: $(grep -m 2 '^#   VM ' "$work/inject.header")"
	elif [ "$(grep -c 'PERF_RECORD_COMM: .*:[0-9]*/[0-9]*$' "$work/inject.script")" -le "$(grep -c PERF_RECORD_COMM "$work/sideband.dump")" ]; then
		bad "perf inject --guest-data: $(grep -c PERF_RECORD_COMM "$work/inject.script") COMM records, the sideband's $(grep -c PERF_RECORD_COMM "$work/sideband.dump") and the host's"
	else
		say "perf inject --guest-data: the sideband's $(wc -l <"$work/want.as") address spaces, VM $vm, and its COMM records in the host's recording"
	fi
}

boot "$image" "Debian's stock kernel $(cat "$STOCK_KERNEL/release")"
check_kallsyms "$image"
check_tasks "$image"
check_sideband "$image"

# expect_refusal COMMAND WHAT WORDS ARGS...: perf kvm COMMAND refuses,
# saying WORDS, and writes nothing: no line on its output, and perf kvm
# kallsyms leaves no file for -o.
expect_refusal() {
	local command=$1 what=$2 words=$3 output=()
	shift 3
	[ "$command" != kallsyms ] || output=(-o "$work/bad.o")
	if "$PERF" kvm "$command" "$@" "${output[@]}" >"$work/bad" 2>"$work/bad.log"; then
		bad "$what: perf kvm $command did not refuse"
	elif ! grep -q "$words" "$work/bad.log"; then
		bad "$what: not the reason expected ('$words'): $(tail -n 2 "$work/bad.log")"
	elif [ -s "$work/bad" ]; then
		bad "$what: perf kvm $command wrote $(wc -l <"$work/bad") lines anyway"
	elif [ -e "$work/bad.o" ]; then
		bad "$what: perf kvm $command left its -o file behind"
	else
		say "$what: perf kvm $command refused ($(grep -m1 "$words" "$work/bad.log"))"
	fi
	rm -f "$work/bad" "$work/bad.o"
}
# Debian's cloud kernel of the base series, another build.
if bash "$TOP/scripts/orc-image.sh" >"$work/orc-image.log" 2>&1; then
	for command in kallsyms tasks; do
		expect_refusal $command "another kernel's image" "nowhere in guest memory" \
			--image "$ORC_IMAGE/vmlinuz" --qmp "$work/qmp"
	done
else
	bad "could not fetch Debian's $LINUX_SERIES cloud kernel: $(tail -n 2 "$work/orc-image.log")"
fi
# The image's ELF image alone: its relocation table is cut off.
"$TREE/scripts/extract-vmlinux" "$image" >"$work/vmlinux" 2>/dev/null || true
python3 - "$work/vmlinux" <<'EOF'
import struct, sys
path = sys.argv[1]
img = open(path, "rb").read()
shoff, = struct.unpack_from("<Q", img, 0x28)
shnum, = struct.unpack_from("<H", img, 0x3c)
open(path, "wb").write(img[:shoff + 64 * shnum])
# And a copy whose .BTF section is named otherwise: an image without BTF.
shstrndx, = struct.unpack_from("<H", img, 0x3e)
strtab, = struct.unpack_from("<Q", img, shoff + 64 * shstrndx + 0x18)
name = img.index(b".BTF\0", strtab)
open(path + "-nobtf", "wb").write(img[:name] + b".XTF" + img[name + 4:shoff + 64 * shnum])
EOF
expect_refusal kallsyms "an ELF image without relocations" "no relocation table" \
	--image "$work/vmlinux" --qmp "$work/qmp"
# An ELF file without kallsyms tables, where the kernel is linked: refused
# once the output file is open.
expect_refusal kallsyms "an ELF file that is no kernel" "no kallsyms token table" \
	--image "$(type -P true)"
expect_refusal tasks "an ELF image without BTF" "has no BTF" --image "$work/vmlinux-nobtf" --qmp "$work/qmp"
for command in kallsyms tasks; do
	expect_refusal $command "no QMP socket" "QMP: can.t connect" --image "$image" --qmp "$work/none"
	expect_refusal $command "a file that is no kernel" "neither an x86 bzImage nor an ELF" \
		--image "$work/console" --qmp "$work/qmp"
done
# perf kvm tasks -o: a file it can't write; a read failing after the
# file is open (a guest whose task list can't be read: an image without
# the walk's layout would be refused before, so the QMP socket of a guest
# gone is what fails it: refused before too).  And without a command,
# until SIGINT.
expect_refusal tasks "-o into a directory that isn't there" "can't write" \
	--image "$image" --qmp "$work/qmp" -o "$work/none/guest.data" -- true
"$PERF" kvm tasks --image "$image" --qmp "$work/qmp" -o "$work/sigint.data" 2>"$work/sigint.log" &
sigint_pid=$!
sleep 2
kill -INT $sigint_pid
if ! wait $sigint_pid; then
	bad "perf kvm tasks -o without a command, stopped with SIGINT: $(tail -n 2 "$work/sigint.log")"
elif ! "$PERF" report --header-only -I -i "$work/sigint.data" 2>/dev/null | grep -q "^# guest address spaces: [1-9]"; then
	bad "perf kvm tasks -o without a command, stopped with SIGINT: no address spaces in its file"
else
	say "perf kvm tasks -o without a command, stopped with SIGINT: $(grep -m1 reads "$work/sigint.log" | sed 's/^perf kvm tasks: //')"
fi
shut_down

# A guest whose task list and maps change while they are read: two loops
# start and end processes all the time.  Each run of perf kvm tasks --maps
# gives a list that holds together, with the processes that stay, or
# refuses it with a reason (a process's maps refused alone say so in the
# list); none is stopped by its 30 s timeout or dies of a signal.
check_churn() {
	local image=$1 runs=20 ok=0 refused=0 partial=0 i rc start ms slowest=0 first= last=
	for i in $(seq $runs); do
		start=$(date +%s%N)
		timeout 30 "$PERF" kvm tasks --image "$image" --qmp "$work/qmp" --maps \
			>"$work/churn" 2>"$work/churn.log"
		rc=$?
		ms=$((($(date +%s%N) - start) / 1000000))
		[ $ms -le $slowest ] || slowest=$ms
		if [ $rc -eq 0 ]; then
			ok=$((ok + 1))
			# init, cat and the two sleeps that stay.
			grep -q "^ *1 *1 *0 init " "$work/churn" && grep -q " cat " "$work/churn" &&
				[ "$(grep -c ' sleep ' "$work/churn")" -ge 2 ] ||
				bad "churn run $i: a list without init, cat or the sleeps: $(grep '^ ' "$work/churn" | head -c 600)"
			! grep -q "no maps:" "$work/churn" || partial=$((partial + 1))
			# The newest pid, which the loops must have moved on.
			last=$(awk '/^ *[0-9]/ && $1 > max { max = $1 } END { print max + 0 }' "$work/churn")
			first=${first:-$last}
		elif [ $rc -eq 255 ] && grep -q "^perf kvm tasks: " "$work/churn.log" && [ ! -s "$work/churn" ]; then
			refused=$((refused + 1))
			[ $refused -gt 3 ] || say "churn run $i refused: $(head -n 1 "$work/churn.log")"
		else
			bad "churn run $i: exit $rc, $(wc -l <"$work/churn") lines, $(tail -n 2 "$work/churn.log")"
		fi
	done
	say "a guest starting processes all the time, $runs runs: $ok lists ($partial with a process's maps refused), $refused refused; the slowest $slowest ms; the newest pid $first, then $last"
	[ $ok -gt 0 ] || bad "no run of $runs gave a list"
	[ "${last:-0}" -gt "${first:-0}" ] || bad "the guest started no process between the first list and the last"
}
# check_churn_sideband IMAGE: perf kvm tasks -o on that guest for 3 s: a
# file perf reads back, with the processes that came and went written (a
# FORK record for each new one, and its COMM; a COMM exec for one that
# exec'd since a read saw it) and their page tables' times, which perf
# takes only if no two processes share a page table at any time.
check_churn_sideband() {
	local image=$1 comms forks news orphans spaces
	if ! timeout 60 "$PERF" kvm tasks --image "$image" --qmp "$work/qmp" -o "$work/churn.data" \
		--interval 50 -- sleep 3 >/dev/null 2>"$work/churn-sideband.log" ||
		! "$PERF" report -D -i "$work/churn.data" >"$work/churn.dump" 2>>"$work/churn-sideband.log" ||
		! "$PERF" report --header-only -I -i "$work/churn.data" >"$work/churn.header" 2>>"$work/churn-sideband.log"; then
		bad "perf kvm tasks -o on a guest starting processes all the time: $(tail -n 3 "$work/churn-sideband.log")"
		return
	fi
	comms=$(grep -c PERF_RECORD_COMM "$work/churn.dump")
	news=$(grep -c "PERF_RECORD_COMM: " "$work/churn.dump")
	forks=$(grep -c "PERF_RECORD_FORK(" "$work/churn.dump")
	spaces=$(sed -n 's/^# guest address spaces: //p' "$work/churn.header")
	say "perf kvm tasks -o on a guest starting processes all the time: $(grep -m1 reads "$work/churn-sideband.log" | sed 's/^perf kvm tasks: //'); $forks FORK, $comms COMM records ($((comms - news)) exec)"
	# init, sh, cat, the sleeps and busybox stay: 7, and the loops' processes.
	[ "$comms" -gt 7 ] || bad "the sideband of a guest starting processes all the time has $comms COMM records"
	# Each FORK followed by its process's COMM (a read in the middle of an
	# exec, between its new mm and its new name, adds a COMM without one).
	orphans=$(awk '
		match($0, /PERF_RECORD_FORK\([0-9]+:/) { pid = substr($0, RSTART + 17, RLENGTH - 18); forked[pid] = 1 }
		match($0, /PERF_RECORD_COMM[^:]*: .*:[0-9]+\//) { s = substr($0, RSTART, RLENGTH - 1); sub(/.*:/, "", s); delete forked[s] }
		END { n = 0; for (p in forked) n++; print n }' "$work/churn.dump")
	[ "$forks" -gt 7 ] && [ "$forks" -le "$news" ] && [ "$orphans" -eq 0 ] ||
		bad "the sideband of a guest starting processes all the time: $forks FORK records, $news COMM records of new processes, $orphans FORK without its COMM"
	[ "${spaces:-0}" -ge 7 ] || bad "the sideband of a guest starting processes all the time has ${spaces:-no} address spaces"
}
boot "$image" "Debian's stock kernel, starting processes all the time" churn
check_churn "$image"
check_churn_sideband "$image"
shut_down

# Debian's cloud kernel of the base series too, its own layouts (kallsyms
# tables relative to their place, 7.3's structures), booted with page
# table isolation, which its sideband must tell.
if [ -s "$ORC_IMAGE/vmlinuz" ]; then
	boot "$ORC_IMAGE/vmlinuz" "Debian's cloud kernel $(cat "$ORC_IMAGE/version" 2>/dev/null), with page table isolation" pti=on
	check_kallsyms "$ORC_IMAGE/vmlinuz"
	check_tasks "$ORC_IMAGE/vmlinuz"
	check_sideband "$ORC_IMAGE/vmlinuz" pti
	shut_down
fi
exit $fail
