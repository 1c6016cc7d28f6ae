#!/bin/bash
# Check what 'make packages' built (scripts/packages.sh): the packages a host
# installs hold what the README's "On your own host" uses.
#
#   scripts/packages-check.sh DIR
#
# The kernel package: a bzImage, its config with KVM as modules, kvm,
# kvm_intel and kvm_amd among its modules, and kvm.ko of this series (its
# enable_guest_callchains parameter).  The perf package: perf under
# /opt/perf-guest-callchains, built as a distribution builds perf (BPF
# skeletons, Perl) and with the libraries the guest workflows
# need, with 'perf kvm script' and 'kallsyms', --guestimage, perf inject --guest-data,
# --sort vm and the flame graph scripts, and the KVM selftests of make
# check-host; its Depends name those libraries.  The QEMU package:
# qemu-system-x86_64 under /opt/qemu-guest-callchains with the
# guest-callchains accelerator property and its QMP commands, depending on
# the distribution's QEMU firmware.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=${1:?usage: packages-check.sh DIR}
bad=0
ok() { say "ok: $*"; }
bad() { say "FAIL: $*"; bad=1; }

image=$(ls "$dir"/linux-image-*.deb 2>/dev/null | grep -v -- -dbg_ | head -n 1)
[ -n "$image" ] || die "no linux-image package in $dir"
contents=$(dpkg-deb -c "$image" | awk '{ print $6 }')
release=$(sed -n 's|^\./boot/vmlinuz-||p' <<<"$contents")
[ -n "$release" ] && ok "$(basename "$image"): /boot/vmlinuz-$release" || bad "no /boot/vmlinuz in $image"
for module in kvm kvm-intel kvm-amd; do
	grep -qE "/kernel/arch/x86/kvm/$module\.ko(\.xz|\.zst|\.gz)?$" <<<"$contents" &&
		ok "module $module" || bad "no $module.ko in $image"
done
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dpkg-deb -x "$image" "$scratch/image"
config=$scratch/image/boot/config-$release
for option in KVM KVM_INTEL KVM_AMD; do
	grep -qx "CONFIG_$option=m" "$config" && ok "CONFIG_$option=m" || bad "CONFIG_$option is not m in /boot/config-$release"
done
# (Whole outputs in variables: 'grep -q' on a pipe would make its writer
# die of SIGPIPE, which pipefail counts.)
kvm=$(find "$scratch/image" -name 'kvm.ko*' | head -n 1)
case $kvm in
*.xz) xz -dc "$kvm" >"$scratch/kvm.ko" ;; *.zst) zstd -qdc "$kvm" >"$scratch/kvm.ko" ;;
*.gz) gzip -dc "$kvm" >"$scratch/kvm.ko" ;; *) cp "$kvm" "$scratch/kvm.ko" ;;
esac
grep -qa 'enable_guest_callchains' "$scratch/kvm.ko" && ok "kvm.ko has enable_guest_callchains (the series)" ||
	bad "kvm.ko has no enable_guest_callchains: not the series' kvm"

perfdeb=$(ls "$dir"/perf-guest-callchains_*.deb 2>/dev/null | head -n 1)
[ -n "$perfdeb" ] || die "no perf-guest-callchains package in $dir"
dpkg-deb -x "$perfdeb" "$scratch/perf"
prefix=$scratch/perf/opt/perf-guest-callchains
perf=$prefix/bin/perf
[ -x "$perf" ] && ok "$(basename "$perfdeb"): $("$perf" version)" || die "no executable perf in $perfdeb"
opts=$("$perf" version --build-options)
for feature in dwarf libelf libtraceevent libpython libperl bpf_skeletons zstd lzma; do
	grep -qE "^ +$feature: \[ on" <<<"$opts" && ok "perf with $feature" || bad "perf built without $feature"
done
depends=$(dpkg-deb -f "$perfdeb" Depends)
for lib in libdw1 libelf1 libtraceevent1 libzstd1 liblzma5; do
	grep -q "$lib" <<<"$depends" && ok "Depends: $lib" || bad "Depends lacks $lib: $depends"
done
kvm_help=$("$perf" kvm -h 2>&1 || true)
inject_help=$("$perf" inject -h 2>&1 || true)
# The subcommands, as its usage line lists them: {top|...|script|kallsyms|tasks}.
grep -qE '[{|]script[|}]' <<<"$kvm_help" && ok "perf kvm script" || bad "perf kvm has no script"
grep -qE '[{|]kallsyms[|}]' <<<"$kvm_help" && ok "perf kvm kallsyms" || bad "perf kvm has no kallsyms"
grep -qE '[{|]tasks[|}]' <<<"$kvm_help" && ok "perf kvm tasks" || bad "perf kvm has no tasks"
grep -q -- '--guestimage' <<<"$kvm_help" && ok "perf kvm --guestimage" || bad "perf kvm has no --guestimage"
grep -q -- '--guest-data' <<<"$inject_help" && ok "perf inject --guest-data" || bad "perf inject has no --guest-data"
# A sort key is looked up once there is a file to report: an empty one.
"$perf" record -q -o "$scratch/empty.data" -e dummy -- true >/dev/null 2>&1 || true
sort_vm=$("$perf" report -i "$scratch/empty.data" --sort vm --stdio 2>&1 || true)
! grep -qi "unknown --sort key" <<<"$sort_vm" &&
	[ -s "$scratch/empty.data" ] && ok "perf report --sort vm" || bad "perf report has no sort key vm (or perf record failed)"
for script in flamegraph.py stackcollapse.py; do
	grep -qs -- 'include-vm\|no-vm' "$prefix/libexec/perf-core/scripts/python/$script" &&
		ok "scripts/python/$script (by VM)" || bad "no $script of the series in the package"
done
tool_help=$("$prefix/bin/kvm_guest_callchains" --help 2>&1 || true)
grep -qi 'usage' <<<"$tool_help" && ok "kvm_guest_callchains" ||
	bad "no kvm_guest_callchains in the perf package"
missing=$(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests" |
	while read -r t; do [ -x "$prefix/libexec/kvm-selftests/$t" ] || echo "$t"; done)
[ -z "$missing" ] && ok "the KVM selftests make check-host runs, in libexec/kvm-selftests" ||
	bad "the perf package lacks the KVM selftests ${missing//$'\n'/ }"
# The test guest: shipped where packages.sh could build it (test-guest.txt);
# PKG_REQUIRE_TEST_GUEST=1 (make check) wants it.
case $(cat "$dir/test-guest.txt" 2>/dev/null) in
shipped:*)
	[ -s "$prefix/share/test-guest/stock/initramfs.cpio.gz" ] && [ -s "$prefix/share/test-guest/stock-kernel/vmlinuz" ] &&
		ok "the test guest make check-host records, in share/test-guest" ||
		bad "test-guest.txt says shipped, and share/test-guest lacks the guest's initramfs or kernel" ;;
*)
	if [ "${PKG_REQUIRE_TEST_GUEST:-0}" = 1 ]; then
		bad "no test guest in the package: $(cat "$dir/test-guest.txt" 2>/dev/null || echo 'no test-guest.txt')"
	else
		say "note: no test guest in the package: $(cat "$dir/test-guest.txt" 2>/dev/null || echo 'no test-guest.txt')"
	fi ;;
esac

qemudeb=$(ls "$dir"/qemu-guest-callchains_*.deb 2>/dev/null | head -n 1)
[ -n "$qemudeb" ] || die "no qemu-guest-callchains package in $dir"
dpkg-deb -x "$qemudeb" "$scratch/qemu"
qemu=$scratch/qemu/opt/qemu-guest-callchains/bin/qemu-system-x86_64
[ -x "$qemu" ] && ok "$(basename "$qemudeb"): $("$qemu" --version | head -n 1)" ||
	die "no executable qemu-system-x86_64 in $qemudeb"
qmp=$(printf '%s\n' '{"execute": "qmp_capabilities"}' '{"execute": "query-qmp-schema"}' \
	'{"execute": "qom-list-properties", "arguments": {"typename": "kvm-accel"}}' '{"execute": "quit"}' |
	"$qemu" -machine none -accel qtest -display none -qmp stdio 2>&1 || true)
grep -q '"name": "guest-callchains", [^}]*"type": "GuestCallchainsLevel"' <<<"$qmp" &&
	ok "-accel kvm,guest-callchains" || bad "no guest-callchains property of the kvm accelerator"
for command in query-guest-callchains set-guest-callchains; do
	grep -q "\"name\": \"$command\"" <<<"$qmp" && ok "QMP $command" || bad "no QMP command $command"
done
qdepends=$(dpkg-deb -f "$qemudeb" Depends)
for dep in qemu-system-data seabios libglib2.0-0; do
	grep -q "$dep" <<<"$qdepends" && ok "the QEMU package depends on $dep" || bad "the QEMU package's Depends lack $dep: $qdepends"
done

[ $bad -eq 0 ] || die "the packages in $dir lack what the README uses (above)"
say "packages in $dir hold what the README uses"
