#!/bin/bash
# Install every Debian package the build, the bench and the tests need.
# Idempotent: packages already present are skipped quickly.  Run as root
# (CI and the developer machines are root); otherwise sudo is used.
# The one place packages are installed: the bench and the demo only check.
# Then L1's QEMU and the guests', built under build/ (scripts/qemu.sh,
# scripts/guest-qemu.sh).
#
#   scripts/deps.sh            everything (make deps)
#   scripts/deps.sh packages   only what make packages builds with: the
#                              kernel, perf and QEMU packages' build tools and
#                              libraries, by the names Debian and Ubuntu
#                              share; no emulator, browser or Node.js
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mode=${1:-all}
case $mode in all|packages) ;; *) die "usage: $0 [packages]" ;; esac

# What make packages needs (and make check, which builds them too).
packages=(
	# kernel build
	build-essential bc bison flex libelf-dev libssl-dev cpio kmod xz-utils
	rsync git ccache perl python3
	# perf from tools/perf, as lib.sh's perf_make and perf_package_make
	# build it: clang and llvm for perf's BPF skeletons, Perl, SDT markers
	pkg-config libdw-dev libtraceevent-dev python3-dev python3-setuptools
	libcap-dev zlib1g-dev libzstd-dev liblzma-dev libnuma-dev libslang2-dev
	clang llvm libperl-dev systemtap-sdt-dev
	# the kernel's bindeb-pkg, the perf package's dependencies
	dpkg-dev debhelper fakeroot zstd
	# the guests' initramfs: the test guest the perf package ships and
	# the demo's (demo/guest-image.sh)
	busybox-static
	# QEMU with patches/qemu (scripts/guest-qemu.sh), the package's and
	# the guests' in L1: 10.2 compiles its device trees with dtc; the
	# package's QEMU with user networking, graphics and virtfs
	ninja-build libglib2.0-dev python3-venv device-tree-compiler
	libpixman-1-dev libslirp-dev libattr1-dev libcap-ng-dev
)
[ "$mode" = packages ] || packages+=(
	# the harness: ps and pgrep (a minimal Debian has neither); ping and ip
	# for perf test's "probe libc's inet_pton & backtrace it with ping"
	procps iputils-ping iproute2
	# perf's other builds (lib.sh's perf_variant_args): libunwind's unwinder
	libunwind-dev
	# KVM selftests
	libc6-dev
	# arm64 build check of the touched directories
	gcc-aarch64-linux-gnu
	# the benchmark report
	python3-matplotlib
	# the guests' QEMU inside L1, host root over 9p; make bench-memslots
	# times its memslot ioctls with strace
	qemu-system-x86 strace
	# make demo: the flame graph's picture in headless Chromium; gdb for
	# the backtrace of a guest perf that crashed (demo/in-l1.sh)
	chromium fonts-dejavu-core gdb
	# Intel VMX under Bochs (scripts/bochs-run.sh): the emulator, its
	# BIOS, an isolinux ISO; 'script' (bsdutils) gives it a terminal
	bochs bochsbios vgabios bochs-term isolinux syslinux-common xorriso bsdutils
)

# make demo: npm installs the flame graph's template and playwright-core
# (demo/deps.sh).  Debian's nodejs and npm, unless the machine has Node.js
# and npm already (from elsewhere: its npm is its own).
if [ "$mode" = all ] && { ! command -v node >/dev/null || ! command -v npm >/dev/null; }; then
	packages+=(nodejs npm)
fi

missing=()
for p in "${packages[@]}"; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing+=("$p")
done

if [ ${#missing[@]} -eq 0 ]; then
	say "all ${#packages[@]} packages present"
else
	export DEBIAN_FRONTEND=noninteractive
	say "installing: ${missing[*]}"
	as_root apt-get update -q >/dev/null
	# The pinned kernel source is installed by scripts/source.sh, which checks
	# that the pinned version is still served; here any version will do.
	as_root apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
	say "installed ${#missing[@]} packages"
fi
# L1's QEMU and the guests', built under build/ (make check runs them as
# stages of their own).
if [ "$mode" != packages ] && [ -z "${DEPS_NO_QEMU:-}" ]; then
	bash "$TOP/scripts/qemu.sh"
	bash "$TOP/scripts/guest-qemu.sh"
fi
