#!/bin/bash
# Run one command on our kernel under Bochs, whose emulated CPU has Intel
# VMX with EPT: the only way this bench executes KVM's Intel code (QEMU's
# TCG emulates AMD SVM only; this machine has no VMX of its own).
#
#   scripts/bochs-run.sh [-t SECONDS] [-n NAME] COMMAND [ARG...]
#
# Bochs boots $BZIMAGE from an ISO (isolinux) with an initramfs: busybox,
# the KVM selftests of $SELFTESTS with their libraries, and
# scripts/bochs-init.sh as /init, which runs COMMAND (a path under
# $SELFTESTS is found at the same path) with its output on the second
# serial port and powers off.  Results in $OUT/bochs/NAME: console.log
# (the kernel's log), output.log, rc, bochs.log.  The kernel log is
# checked as L1's is (scripts/check-kernel-log.sh).  BOCHS_IPS (100
# million) is the instructions a second of emulated time: the TSC and
# timers run at that rate.  BOCHS_APPEND adds to the kernel command line.
#
# The CPU is described feature by feature (cpuid: below) rather than as
# one of Bochs' models: corei7_skylake_x reports XSAVE sizes that don't
# match its XSAVE features ("XSAVE consistency problem", a WARN) and a
# CPUID leaf 1 logical-processor count below leaf 4's core count (a WARN
# in parse_legacy()); this CPU has no XSAVE and no HT.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

run_options 600 "$@"
[ -f "$BZIMAGE" ] || die "no kernel at $BZIMAGE: run 'make build' first"
command -v bochs-bin >/dev/null && command -v xorriso >/dev/null ||
	die "bochs or xorriso missing: run 'make deps'"

results=$OUT/bochs/$name
img=$results/image
rm -rf "$results"
mkdir -p "$img/root"/{bin,proc,sys,dev,tmp} "$img/iso/isolinux"

# The initramfs: busybox, the selftests and every library they load.
say "making the initramfs (busybox, $SELFTESTS, bochs-init.sh)"
root=$img/root
cp /bin/busybox "$root/bin/busybox"
for applet in sh mount mkdir cat echo sleep poweroff dmesg grep sort uniq head tail wc ls; do
	ln -s busybox "$root/bin/$applet"
done
mkdir -p "$root$SELFTESTS"
cp -a "$SELFTESTS/." "$root$SELFTESTS/"
find "$root$SELFTESTS" -name '*.[od]' -delete
for lib in $(find "$SELFTESTS" -type f -perm -u+x -exec ldd {} \; 2>/dev/null |
	grep -o '/[^ ]*' | sort -u); do
	mkdir -p "$root$(dirname "$lib")"
	cp -L "$lib" "$root$lib"
done
install -m 0755 "$TOP/scripts/bochs-init.sh" "$root/init"
command_script "$SELFTESTS" >"$root/cmd"
(cd "$root" && find . | LC_ALL=C sort | cpio -o -H newc --quiet) | gzip -1 >"$img/iso/initrd.gz"

cp "$BZIMAGE" "$img/iso/bzImage"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$img/iso/isolinux/"
cat >"$img/iso/isolinux/isolinux.cfg" <<EOF
default linux
prompt 0
label linux
  kernel /bzImage
  append initrd=/initrd.gz console=ttyS0 loglevel=7 log_buf_len=4M panic=-1 rcupdate.rcu_cpu_stall_timeout=300 ${BOCHS_APPEND:-}
EOF
xorriso -as mkisofs -quiet -o "$img/boot.iso" -b isolinux/isolinux.bin -c isolinux/boot.cat \
	-no-emul-boot -boot-load-size 4 -boot-info-table "$img/iso" 2>"$img/xorriso.log" ||
	die "xorriso failed: $(tail -n 3 "$img/xorriso.log")"

cat >"$img/bochsrc" <<EOF
megs: 1024
cpu: count=1, ips=${BOCHS_IPS:-100000000}, reset_on_triple_fault=0, ignore_bad_msrs=1
cpuid: level=6, family=6, model=0x55, stepping=4, vendor_string="GenuineIntel", brand_string="Bochs VMX"
cpuid: x86_64=1, mmx=1, sep=1, simd=sse4_2, apic=xapic, movbe=1, aes=1, xsave=0, 1g_pages=1, pcid=1
cpuid: fsgsbase=1, smep=1, smap=1, vmx=2
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
ata0-master: type=cdrom, path="$img/boot.iso", status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev="$results/console.log"
com2: enabled=1, mode=file, dev="$results/output.log"
display_library: term
log: $results/bochs.log
panic: action=fatal
error: action=report
info: action=report
debug: action=ignore
EOF
echo c >"$img/debugger.rc"
: >"$results/console.log"
: >"$results/output.log"

say "booting $BZIMAGE under Bochs (Intel VMX) for '${command[*]}' (log: $results/console.log)"
start=$(date +%s)
# Debian's Bochs has no display-less library: 'term' under a pseudo
# terminal.  It ignores SIGTERM: it is killed by its pid.
script -qfec "exec bochs-bin -q -f '$img/bochsrc' -rc '$img/debugger.rc'" /dev/null \
	</dev/null >"$results/bochs.tty" 2>&1 &
wrapper=$!
bochs=
for _ in $(seq 50); do
	bochs=$(pgrep -n -f "bochs-bin -q -f $img/bochsrc" || true)
	[ -n "$bochs" ] && break
	sleep 0.1
done
[ -n "$bochs" ] || die "bochs did not start: $(tail -n 5 "$results/bochs.tty")"
tail -n +1 -f --pid="$bochs" "$results/output.log" | tr -d '\r' &
tailer=$!
while kill -0 "$bochs" 2>/dev/null; do
	if [ $(($(date +%s) - start)) -ge "$timeout" ]; then
		say "timed out after ${timeout}s; last console lines:"
		tail -n 30 "$results/console.log" | tr -d '\r' | sed 's/^/  | /'
		kill -9 "$bochs"
		break
	fi
	grep -q 'bochs-init: done' "$results/console.log" 2>/dev/null && sleep 2 && break
	sleep 1
done
kill -9 "$bochs" 2>/dev/null || true
wait "$wrapper" 2>/dev/null || true
kill "$tailer" 2>/dev/null || true
elapsed=$(($(date +%s) - start))

rc=$(tr -d '\r' <"$results/console.log" | sed -n 's/.*bochs-init: done, exit status \([0-9]*\).*/\1/p' | tail -n 1)
if [ -n "$rc" ]; then
	echo "$rc" >"$results/rc"
	say "Bochs finished in ${elapsed}s; command exit status $rc"
else
	say "Bochs ended after ${elapsed}s before the command finished; last console lines:"
	tail -n 30 "$results/console.log" | tr -d '\r' | sed 's/^/  | /'
	rc=125
fi
if ! bash "$TOP/scripts/check-kernel-log.sh" "$results/console.log"; then
	[ "$rc" -ne 0 ] || rc=3
fi
exit "$rc"
