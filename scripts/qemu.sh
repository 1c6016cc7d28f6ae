#!/bin/bash
# The QEMU that runs L1: this release's own qemu-system-x86 where it is at
# least $L1_QEMU_MIN_VERSION (Debian 13: 10.0), linked under $BUILD/qemu;
# else Debian's qemu-system-x86 of the version config/base.conf pins
# ($L1_QEMU_VERSION, from $L1_QEMU_SUITE), unpacked under $BUILD/qemu,
# never installed.  Prints the version it used; falls back to the newest
# of the same major version the suite serves, loudly, when the pinned one
# is gone.
#
# Why not Debian 12's QEMU (7.2): its TCG emulation of nested SVM loses
# L1's own interrupts and guest registers while L1 runs two KVM guests
# (docs/measurements.md).  Only the emulator of L1 changes: the guests
# inside L1 run under the machine's QEMU with KVM, as a user's do.
#
# The packages are downloaded with apt state of their own (lib.sh's
# apt_suite, from the Debian mirror the machine's apt sources name) and
# unpacked with dpkg-deb; the machine's apt configuration, packages and
# libraries are left alone.  The suite's qemu-system-x86 is built for this
# release and needs only its libraries; one that needs a library the
# machine lacks is refused by name.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$QEMUDIR
root=$dir/root
packages=(qemu-system-x86 qemu-system-common qemu-system-data)

qemu=$root/usr/bin/qemu-system-x86_64	# lib.sh's $L1_QEMU unless overridden

# The release's own QEMU where it is new enough (Debian 13 ships 10.0;
# scripts/deps.sh installs it for the guests inside L1): linked, not
# fetched.
system=$(dpkg-query -W -f='${Version}' qemu-system-x86 2>/dev/null || true)
if [ -x /usr/bin/qemu-system-x86_64 ] && [ -n "$system" ] &&
	dpkg --compare-versions "$system" ge "$L1_QEMU_MIN_VERSION"; then
	if [ "$(cat "$dir/version" 2>/dev/null)" != "system $system" ]; then
		rm -rf "$dir/deb" "$root" "$dir/version"
		mkdir -p "$root/usr/bin" "$root/usr/share"
		ln -s /usr/bin/qemu-system-x86_64 "$qemu"
		ln -s /usr/share/qemu /usr/share/seabios "$root/usr/share/"
		echo "system $system" >"$dir/version"
	fi
	say "L1's QEMU: this release's own qemu-system-x86 $system (at least $L1_QEMU_MIN_VERSION): $("$qemu" --version | head -n1)"
	exit 0
fi
say "this release's qemu-system-x86 ${system:-(none)} is older than $L1_QEMU_MIN_VERSION: L1 runs on $L1_QEMU_SUITE's"
if [ -x "$qemu" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$L1_QEMU_VERSION" ]; then
	say "L1's QEMU: $L1_QEMU_VERSION in $root"
	exit 0
fi

apt_suite_init "$dir/apt" "$L1_QEMU_SUITE"
major=${L1_QEMU_VERSION#*:}
major=${major%%.*}
version=$(apt_suite_versions "$dir/apt" qemu-system-x86 | grep -E "^([0-9]+:)?$major\." | sort -V |
	pick_pinned "qemu-system-x86 for L1" "$L1_QEMU_VERSION") ||
	die "$L1_QEMU_SUITE serves no qemu-system-x86 $major.x"
# QEMU's BIOS: the suite's seabios, which its QEMU is built against.
seabios=$(apt_suite_versions "$dir/apt" seabios | head -n1)
[ -n "$seabios" ] || die "$L1_QEMU_SUITE serves no seabios"

rm -rf "$dir/deb" "$root" "$dir/version"
mkdir -p "$dir/deb" "$root"
say "downloading qemu-system-x86 $version and seabios $seabios from $L1_QEMU_SUITE (about 14 MB)"
(cd "$dir/deb" && apt_suite "$dir/apt" download "${packages[@]/%/=$version}" "seabios=$seabios" >/dev/null) ||
	die "could not download qemu-system-x86 $version from $L1_QEMU_SUITE"
for deb in "$dir"/deb/*.deb; do
	dpkg-deb -x "$deb" "$root"
done
missing=$(ldd "$qemu" | awk '/not found/ { print $1 }')
[ -z "$missing" ] || die "qemu-system-x86 $version needs libraries this machine lacks: $missing"
# (A fallback version is fetched again each time, until base.conf pins it.)
echo "$version" >"$dir/version"
say "L1's QEMU: $("$qemu" --version | head -n1)"
