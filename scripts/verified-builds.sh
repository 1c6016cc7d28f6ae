#!/bin/bash
# What built before from the same inputs, so that make check need not build
# it again: tests/verified-builds (tracked, committed with the change that
# made it) and this checkout's own record since, $VERIFIED_BUILDS
# (build/verified-builds).  make check reads both and writes only its own
# record, so no tracked file changes during a run (harness/tracked-files);
# make verified-builds copies it into tests/verified-builds, to commit.
#
#   scripts/verified-builds.sh merge    the record: both, each line once
#   scripts/verified-builds.sh bisect   every patch builds on its own
#       (scripts/bisect-build.sh, reading and writing the record), and a
#       note of how many had been built before from the same inputs
#   scripts/verified-builds.sh packages-small   make packages' path in its
#       small configuration, when what it is made from changed since the
#       record has it built (make packages PKG_SMALL=1 builds it whatever
#       the record says): the packaging scripts, the configurations, the
#       base, the compiler, the package's perf build and its selftests
set -uo pipefail
. "$(dirname "$0")/lib.sh"
export VERIFIED_BUILDS
tracked=$TOP/tests/verified-builds

merge() {
	{
		grep '^#' "$tracked" 2>/dev/null || true
		cat "$tracked" "$VERIFIED_BUILDS" 2>/dev/null | grep -v '^#' | awk '!seen[$0]++'
	} >"$VERIFIED_BUILDS.new"
	mv "$VERIFIED_BUILDS.new" "$VERIFIED_BUILDS"
}

bisect() {
	local out known
	out=$(mktemp)
	bash "$TOP/scripts/bisect-build.sh" | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || { rm -f "$out"; return 1; }
	known=$(sed -n 's/.*all \([0-9]*\) patches build on their own (built before, same key: \([0-9]*\);.*/\2 of \1/p' "$out")
	rm -f "$out"
	stage_note "cached: ${known:-?} patches built before with the same inputs (tests/verified-builds, $VERIFIED_BUILDS)"
}

packages_small() {
	local key
	key=$( {
		cat "$TOP/scripts/packages.sh" "$TOP/scripts/packages-check.sh" \
			"$TOP/config/packages-small.config" "$TOP/config/base.conf" \
			"$TOP/tests/l1/kvm-selftests" "$TOP/demo/guest-image.sh" \
			"$TOP/demo/guest-init.sh" "$TOP/demo/stock-kernel.sh" \
			"$KVM_GUEST_CALLCHAINS_TOOL" "$TOP/scripts/guest-qemu.sh" \
			"$TOP/qemu/guest-devices.mak"
		# The series themselves: a kernel patch can break the package's
		# build (KVM as a module) where make check's kernel builds.
		cat "$TOP"/patches/*/0*.patch
		gcc --version | head -n 1
		declare -f perf_package_make selftests_make qemu_orig_tarball qemu_build_tools
	} | sha1sum | cut -d' ' -f1)
	if grep -qx "packages-small $key" "$tracked" "$VERIFIED_BUILDS" 2>/dev/null; then
		stage_note "cached: built before from these inputs ($key in tests/verified-builds or $VERIFIED_BUILDS); PKG_SMALL=1 make packages builds it again"
		return 0
	fi
	PKG_SMALL=1 PKG_REQUIRE_TEST_GUEST=1 bash "$TOP/scripts/packages.sh" || return 1
	# Where scripts/bisect-build.sh, which keeps the other lines above its
	# own, leaves it: after the comments, before the builds of the series
	# (one order whoever writes it).
	{
		grep '^#' "$VERIFIED_BUILDS" 2>/dev/null || true
		echo "packages-small $key"
		grep -v -e '^#' -e '^packages-small ' "$VERIFIED_BUILDS" 2>/dev/null || true
	} >"$VERIFIED_BUILDS.new"
	mv "$VERIFIED_BUILDS.new" "$VERIFIED_BUILDS"
}

case ${1:-} in
merge) merge ;;
bisect) bisect ;;
packages-small) packages_small ;;
*) die "usage: $0 merge|bisect|packages-small" ;;
esac
