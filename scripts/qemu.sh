#!/bin/bash
# The QEMU that emulates L1: qemu-system-x86_64 built from Debian's source
# of QEMU $L1_QEMU_VERSION (config/base.conf: its upstream tarball, as the
# suite's Sources index lists and checksums it) with the harness's fixes to
# QEMU's TCG emulation of nested SVM (qemu/*.patch, below), for the
# machine L1 needs (qemu/l1-devices.mak); the firmware from the suite's
# qemu-system-data and seabios.  Everything under $BUILD/qemu, nothing
# installed; rebuilt only when the version, the patches or this script
# change.  The guests inside L1 run under the machine's own QEMU with KVM,
# as a user's do.
#
# Why not a packaged QEMU: Debian 12's 7.2 loses L1's interrupts and guest
# registers while L1 runs two KVM guests; 10.0 (Debian 13, Debian 12's
# backports) and upstream up to 10.2 deliver an interrupt injected into a
# nested guest twice (its handler re-entered with interrupts off: an L1
# of two CPUs could not boot a guest) and leave a delivered event's type in
# EXITINTINFO (KVM then refuses the guest's MMIO: "KVM internal error.
# Suberror: 3"); 10.0 also loses L1's own interrupts while entering and
# leaving a guest (fixed upstream in 10.2: L1 stuck in a guest with its
# timer pending).  The patches say how; docs/measurements.md has the runs.
#
# The suite's packages and source are read with apt state of their own
# (lib.sh's apt_suite, the Debian mirror the machine's apt sources name);
# meson >= 1.5, which QEMU 10 needs and Debian 12 lacks, is the suite's
# (architecture-independent), unpacked beside the build.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$QEMUDIR
root=$dir/root
qemu=$root/usr/bin/qemu-system-x86_64	# lib.sh's $L1_QEMU unless overridden
patches=("$TOP"/qemu/*.patch)
key="$L1_QEMU_VERSION $(cat "${patches[@]}" "$TOP/qemu/l1-devices.mak" "$0" | sha256sum | cut -c1-16)"

if [ -x "$qemu" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$key" ]; then
	say "L1's QEMU: $("$qemu" --version | head -n1), with the ${#patches[@]} patches of qemu/ (built before: $key)"
	exit 0
fi

rm -rf "$dir/deb" "$dir/meson" "$dir/src" "$root" "$dir/version"
mkdir -p "$dir/deb" "$dir/meson" "$root/usr/bin"
read -r version tarball < <(qemu_orig_tarball "$dir" "$L1_QEMU_SUITE" "$L1_QEMU_VERSION")
upstream=${version#*:}
upstream=${upstream%-*}
say "downloading qemu-system-data, seabios and meson from $L1_QEMU_SUITE"
qemu_build_tools "$dir/meson"
# Each at a version of the suite's: without one, apt would pick the
# machine's installed version where it is newer (Debian 13's seabios).
debs=("qemu-system-data=$version")
for p in seabios; do
	v=$(apt_suite_versions "$dir/apt" "$p" | head -n1)
	[ -n "$v" ] || die "$L1_QEMU_SUITE serves no $p"
	debs+=("$p=$v")
done
(cd "$dir/deb" && apt_suite "$dir/apt" download "${debs[@]}" >/dev/null) ||
	die "could not download ${debs[*]} from $L1_QEMU_SUITE"
for deb in "$dir"/deb/qemu-system-data_*.deb "$dir"/deb/seabios_*.deb; do
	dpkg-deb -x "$deb" "$root"
done

mkdir -p "$dir/src"
tar -xf "$tarball" -C "$dir/src" --strip-components=1
cd "$dir/src"
for p in "${patches[@]}"; do
	say "applying $(basename "$p")"
	patch -s -p1 <"$p" || die "$(basename "$p") does not apply to QEMU $upstream"
done
# Debian's tarball (+ds) drops the prebuilt firmware: do not unpack EDK2's.
sed -i 's/^    unpack_edk2_blobs = bzip2.found()$/    unpack_edk2_blobs = false/' meson.build
cp "$TOP/qemu/l1-devices.mak" configs/devices/x86_64-softmmu/l1.mak

export PATH=$dir/meson/usr/bin:$PATH PYTHONPATH=$dir/meson/usr/lib/python3/dist-packages
mkdir -p build
cd build
say "configuring qemu-system-x86_64 (TCG and KVM, the devices of qemu/l1-devices.mak; log: $dir/build.log)"
../configure --target-list=x86_64-softmmu --without-default-features \
	--without-default-devices --with-devices-x86_64=l1 \
	--enable-tcg --enable-kvm --enable-virtfs --enable-attr --disable-pixman --disable-fdt \
	--disable-docs --disable-werror --disable-install-blobs --disable-download \
	>"$dir/build.log" 2>&1 ||
	{ tail -n 20 "$dir/build.log"; die "QEMU's configure failed"; }
say "building qemu-system-x86_64 ($(ninja -n qemu-system-x86_64 | wc -l) steps: 2-3 minutes on 2 CPUs)"
ninja -j"$(nproc)" qemu-system-x86_64 >>"$dir/build.log" 2>&1 ||
	{ tail -n 20 "$dir/build.log"; die "QEMU's build failed"; }
cp qemu-system-x86_64 "$qemu"
missing=$(ldd "$qemu" | awk '/not found/ { print $1 }')
[ -z "$missing" ] || die "the QEMU built needs libraries this machine lacks: $missing"
echo "$key" >"$dir/version"
say "L1's QEMU: $("$qemu" --version | head -n1), with the ${#patches[@]} patches of qemu/"
