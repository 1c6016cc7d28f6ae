#!/bin/bash
# make packages: what a Debian or Ubuntu host installs to try the series,
# built from the work tree (all the series applied):
#
#   linux-image-<release>_*.deb (and linux-headers, linux-libc-dev): the
#     kernel's own 'make bindeb-pkg' of the pinned $LINUX_SERIES with the series,
#     configured from PKG_CONFIG: by default the running host's
#     /boot/config-$(uname -r) or /proc/config.gz, else Debian's own config
#     (linux-config-$LINUX_SERIES);
#     KVM as modules (kvm, kvm_intel, kvm_amd), no module signing keys of
#     Debian's, no debug info unless PKG_DEBUG_INFO=1, only the modules the
#     host has loaded with PKG_LOCALMODCONFIG=1 (the kernel's localmodconfig);
#   perf-guest-callchains_*.deb: perf from the series' tools/perf with
#     what a distribution's perf has (lib.sh's perf_package_make: BPF
#     skeletons, libdw, libelf, libtraceevent, python, perl, SDT, zstd and
#     xz for kernel images),
#     installed under /opt/perf-guest-callchains beside the distribution's
#     perf, its scripts (and man pages where asciidoc is installed) included,
#     with kvm_guest_callchains, which opts a running VM in, the KVM
#     selftests make check-host runs (libexec/kvm-selftests) and the real
#     guest it records (share/test-guest: Debian's stock cloud kernel and
#     the demo's guest, where a Debian mirror is at hand; test-guest.txt
#     says whether it was shipped);
#   qemu-guest-callchains_*.deb: qemu-system-x86_64 with patches/qemu
#     (the guest-callchains accelerator property, QMP and HMP commands),
#     from Debian's QEMU source (scripts/guest-qemu.sh package), under
#     /opt/qemu-guest-callchains beside the distribution's QEMU, with its
#     firmware.
#
# then checks their contents (scripts/packages-check.sh).  Everything goes
# to $PKGOUT (build/packages).  On this 2-core machine the kernel of a
# distribution config takes hours; PKG_SMALL=1 builds the same path with a
# small configuration (tinyconfig + config/packages-small.config, KVM as
# modules; the QEMU package from the guests' QEMU build, its devices
# only), which 'make check' does so that the path does not rot.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

small=${PKG_SMALL:-0}
if [ "$small" = 1 ]; then
	PKGOUT=${PKGOUT:-$BUILD/packages-small}
else
	PKGOUT=${PKGOUT:-$BUILD/packages}
fi
kobj=$PKGOUT/kbuild
pobj=$PKGOUT/perf-build
prefix=/opt/perf-guest-callchains
[ -e "$TREE/.git" ] || die "no work tree at $TREE: run 'make tree' first"
mkdir -p "$kobj" "$pobj"
rm -f "$PKGOUT"/*.deb "$PKGOUT"/*.buildinfo "$PKGOUT"/*.changes

kmake() { make -s -C "$TREE" O="$kobj" CC="ccache gcc" -j"$(nproc)" "$@"; }

# The host's configuration: PKG_CONFIG, the running kernel's (/boot, or
# /proc/config.gz), or Debian's.
host_config() {
	local deb=/usr/src/linux-config-$LINUX_SERIES
	if [ -n "${PKG_CONFIG:-}" ]; then
		[ -f "$PKG_CONFIG" ] || die "PKG_CONFIG=$PKG_CONFIG: no such file"
		echo "$PKG_CONFIG"
	elif [ -f "/boot/config-$(uname -r)" ]; then
		echo "/boot/config-$(uname -r)"
	elif [ -r /proc/config.gz ]; then
		# The running kernel's own, where it keeps one (IKCONFIG_PROC).
		gzip -dc /proc/config.gz >"$PKGOUT/running.config"
		echo "$PKGOUT/running.config"
	else
		[ -d "$deb" ] || as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends "linux-config-$LINUX_SERIES" >/dev/null 2>&1 ||
			die "no /boot/config-$(uname -r) or /proc/config.gz, and apt has no linux-config-$LINUX_SERIES: name a kernel configuration with PKG_CONFIG="
		ls "$deb"/config.amd64_none_amd64.xz >/dev/null || die "no amd64 config in $deb"
		xz -dc "$deb"/config.amd64_none_amd64.xz >"$PKGOUT/debian.config"
		echo "$PKGOUT/debian.config"
	fi
}

configure_kernel() {
	local config
	if [ "$small" = 1 ]; then
		merge_fragment "$kobj" "$TOP/config/packages-small.config" kmake
		return
	fi
	config=$(host_config)
	say "configuring the kernel from $config"
	cp "$config" "$kobj/.config"
	# Debian's config names its own signing keys, which we don't have:
	# modules are signed with a key made at build time instead.  KVM as
	# modules for either vendor, also from a config without modules (a
	# cloud or Firecracker kernel's).
	"$TREE/scripts/config" --file "$kobj/.config" \
		-e MODULES -e MODULE_UNLOAD -e VIRTUALIZATION -e CPU_SUP_INTEL -e CPU_SUP_AMD \
		-m KVM -m KVM_INTEL -m KVM_AMD \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str SYSTEM_REVOCATION_KEYS "" \
		--set-str LOCALVERSION "-guest-callchains" -d LOCALVERSION_AUTO
	# The kernel's localmodconfig: only the modules the host has loaded
	# (lsmod), and KVM's three whatever the host's vendor: a build of tens
	# of minutes instead of hours.
	if [ "${PKG_LOCALMODCONFIG:-0}" = 1 ]; then
		lsmod >"$PKGOUT/lsmod.txt" 2>/dev/null || {
			say "this host lists no loaded modules (no /proc/modules): keeping none but KVM's"
			echo "Module                  Size  Used by" >"$PKGOUT/lsmod.txt"
		}
		say "trimming to the $(($(wc -l <"$PKGOUT/lsmod.txt") - 1)) modules this host has loaded (localmodconfig)"
		kmake LSMOD="$PKGOUT/lsmod.txt" localmodconfig </dev/null >/dev/null 2>&1 ||
			die "make localmodconfig failed"
		"$TREE/scripts/config" --file "$kobj/.config" -m KVM -m KVM_INTEL -m KVM_AMD
	fi
	if [ "${PKG_DEBUG_INFO:-0}" != 1 ]; then
		"$TREE/scripts/config" --file "$kobj/.config" \
			-d DEBUG_INFO -d DEBUG_INFO_DWARF4 -d DEBUG_INFO_DWARF5 \
			-d DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT -d DEBUG_INFO_BTF -e DEBUG_INFO_NONE
	fi
	kmake olddefconfig >/dev/null
	for option in KVM KVM_INTEL KVM_AMD; do
		grep -qx "CONFIG_$option=m" "$kobj/.config" || die "CONFIG_$option is not a module in $kobj/.config"
	done
}

configure_kernel
say "building the kernel package (make bindeb-pkg) in $kobj"
start=$(date +%s)
# LOCALVERSION= (empty, set): no "+" for a tree past its release tag.
kmake LOCALVERSION= bindeb-pkg >"$PKGOUT/kernel-build.log" 2>&1 || {
	tail -n 40 "$PKGOUT/kernel-build.log"
	die "make bindeb-pkg failed (log: $PKGOUT/kernel-build.log)"
}
say "kernel package built in $(($(date +%s) - start)) s"

# perf: built for its prefix, installed into a package root, packaged with
# the shared libraries it links as its dependencies.
say "building perf for $prefix"
root=$PKGOUT/perf-root
rm -rf "$root"
perf_package_make "$TREE" "$pobj" prefix="$prefix" >"$PKGOUT/perf-build.log" 2>&1 &&
	perf_package_make "$TREE" "$pobj" prefix="$prefix" DESTDIR="$root" install \
		>>"$PKGOUT/perf-build.log" 2>&1 || {
	tail -n 40 "$PKGOUT/perf-build.log"
	die "perf build failed (log: $PKGOUT/perf-build.log)"
}
# The man pages, where asciidoc is there to make them (not on CI's path).
if command -v asciidoc >/dev/null && command -v xmlto >/dev/null; then
	perf_package_make "$TREE" "$pobj" prefix="$prefix" DESTDIR="$root" install-man \
		>>"$PKGOUT/perf-build.log" 2>&1 || say "no man pages: install-man failed"
fi
# The administrator's tool that opts a running VM in, from the kernel series.
install -m 0755 "$KVM_GUEST_CALLCHAINS_TOOL" "$root$prefix/bin/kvm_guest_callchains"
# The KVM selftests make check-host runs on a host booted into this
# kernel (tests/l1/kvm-selftests), built against its headers.
say "building the KVM selftests make check-host runs"
mapfile -t selftests < <(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests")
kmake headers_install >"$PKGOUT/selftests-build.log" 2>&1 &&
	KBUILD=$kobj selftests_make "$TREE" "$PKGOUT/selftests" "${selftests[@]/#/$PKGOUT/selftests/}" \
		>>"$PKGOUT/selftests-build.log" 2>&1 || {
	tail -n 40 "$PKGOUT/selftests-build.log"
	die "the KVM selftests did not build (log: $PKGOUT/selftests-build.log)"
}
for t in "${selftests[@]}"; do
	install -D -m 0755 "$PKGOUT/selftests/$t" "$root$prefix/libexec/kvm-selftests/$t"
done
# The real guest make check-host records: Debian's stock cloud kernel
# (demo/stock-kernel.sh, from a Debian mirror) and the demo's stock guest
# with this package's perf (demo/guest-image.sh).  Where no Debian mirror
# is at hand (Ubuntu) the package goes without, said here and in
# test-guest.txt; make check-host then builds one where it can.
guest=$PKGOUT/test-guest
share=$root$prefix/share/test-guest
rm -rf "$guest"
say "building the test guest make check-host records (Debian's stock cloud kernel, the demo's programs, this perf)"
if bash "$TOP/demo/stock-kernel.sh" >"$PKGOUT/test-guest.log" 2>&1 &&
	DEMOBUILD=$guest PERF=$root$prefix/bin/perf DEMO_GUEST=stock \
		bash "$TOP/demo/guest-image.sh" >>"$PKGOUT/test-guest.log" 2>&1; then
	install -D -m 0644 "$guest/stock/initramfs.cpio.gz" "$share/stock/initramfs.cpio.gz"
	for f in vmlinuz config release; do
		install -D -m 0644 "$STOCK_KERNEL/$f" "$share/stock-kernel/$f"
	done
	echo "shipped: Debian's stock cloud kernel $(cat "$STOCK_KERNEL/release"), in $prefix/share/test-guest" >"$PKGOUT/test-guest.txt"
else
	echo "not shipped: $(tail -n 1 "$PKGOUT/test-guest.log")" >"$PKGOUT/test-guest.txt"
	say "WARNING: the package goes without the test guest ($(tail -n 1 "$PKGOUT/test-guest.log"); log: $PKGOUT/test-guest.log)"
fi
version=$("$root$prefix/bin/perf" version | awk '{ print $3 }')
mkdir -p "$root/DEBIAN" "$PKGOUT/shlibs/debian"
echo "Source: perf-guest-callchains" >"$PKGOUT/shlibs/debian/control"
depends=$(cd "$PKGOUT/shlibs" && dpkg-shlibdeps -O --ignore-missing-info \
	-e"$root$prefix/bin/perf" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
cat >"$root/DEBIAN/control" <<EOF
Package: perf-guest-callchains
Version: ${version}-1
Architecture: $(dpkg --print-architecture)
Maintainer: $(git -C "$TREE" log -1 --format='%an <%ae>')
Depends: $depends
Section: devel
Priority: optional
Description: perf with guest call chains for KVM hosts
 perf from Linux $LINUX_SERIES with the guest call chain series: perf kvm
 script, guest processes from the guest's sideband, guest stacks unwound
 with DWARF and ORC.  Installed under $prefix, beside the distribution's
 perf: run $prefix/bin/perf.  With the KVM selftests and the test guest
 that make check-host runs, in $prefix/libexec/kvm-selftests and
 $prefix/share/test-guest.
EOF
dpkg-deb --root-owner-group -Zxz -b "$root" "$PKGOUT/perf-guest-callchains_${version}-1_$(dpkg --print-architecture).deb" >/dev/null
# The VMM that opts its VMs in: QEMU with patches/qemu.
PKG_SMALL=$small bash "$TOP/scripts/guest-qemu.sh" package "$PKGOUT"
say "packages in $PKGOUT:"
ls -1 "$PKGOUT"/*.deb | sed 's/^/  /'
bash "$TOP/scripts/packages-check.sh" "$PKGOUT"
