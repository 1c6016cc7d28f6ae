#!/bin/bash
# The guests' QEMU: qemu-system-x86_64 with the QEMU series of patches/qemu
# (the guest-callchains accelerator property, QMP and HMP commands), built
# from Debian's source of QEMU $GUEST_QEMU_VERSION (config/base.conf),
# with KVM and TCG and the devices of qemu/guest-devices.mak.  The demo's
# guests and tests/l1's run under it inside L1, opted in through QEMU.
#
#   scripts/guest-qemu.sh          build it into $GUEST_QEMU, only when the
#                                  version, the series, the devices or this
#                                  script changed (make deps runs this)
#   scripts/guest-qemu.sh tree     materialise $GUEST_QEMU_DIR/src: a git
#                                  tree, tag base, branch series (git am)
#   scripts/guest-qemu.sh export   write src's base..series back into
#                                  patches/qemu (the cover letter keeps its
#                                  text, its shortlog and diffstat are
#                                  regenerated)
#   scripts/guest-qemu.sh package OUTDIR
#                                  qemu-guest-callchains_*.deb: the same
#                                  source with QEMU's default devices and
#                                  the features this host's libraries give,
#                                  under /opt/qemu-guest-callchains
#                                  (PKG_SMALL=1: the build above, packaged)
#
# base is Debian's tarball with what building it here needs: its +ds
# tarball has no EDK2 firmware to unpack, and the devices file.  The QEMU
# it builds uses the machine's firmware (qemu-system-data, seabios,
# ipxe-qemu), as Debian's QEMU does; meson and pycotap (for QEMU's
# functional tests) come from lib.sh's qemu_build_tools.  To work on the
# series: edit and commit in src, 'ninja -C $GUEST_QEMU_DIR/build', then
# export.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

dir=$GUEST_QEMU_DIR
src=$dir/src
series=${QEMU_PATCHES:-$TOP/patches/qemu}	# another directory: make check's round trip
patches=("$series"/0[0-9][0-9][1-9]-*.patch)

# mail_from PATCH name|email: the author a patch's From: names.
mail_from() {
	python3 - "$1" "$2" <<'EOF'
import email, email.utils, sys
with open(sys.argv[1], encoding="utf-8") as f:
    name, address = email.utils.parseaddr(email.message_from_file(f)["From"])
print(name if sys.argv[2] == "name" else address)
EOF
}

tree() {
	local version tarball
	read -r version tarball < <(qemu_orig_tarball "$dir" "$GUEST_QEMU_SUITE" "$GUEST_QEMU_VERSION")
	rm -rf "$src"
	mkdir -p "$src"
	tar -xf "$tarball" -C "$src" --strip-components=1
	cd "$src"
	sed -i 's/^    unpack_edk2_blobs = bzip2.found()$/    unpack_edk2_blobs = false/' meson.build
	cp "$TOP/qemu/guest-devices.mak" configs/devices/x86_64-softmmu/guest.mak
	git init -q
	# The base commit and the cover letter are the series author's.
	git config user.name "$(mail_from "${patches[0]}" name)"
	git config user.email "$(mail_from "${patches[0]}" email)"
	git add -A >/dev/null
	git commit -q -m "QEMU ${version#*:} (Debian's $(basename "$tarball")), as scripts/guest-qemu.sh builds it"
	git tag base
	git checkout -q -b series
	say "applying the ${#patches[@]} patches of patches/qemu to QEMU ${version#*:}"
	git am -q --keep-cr "${patches[@]}" || die "patches/qemu does not apply to QEMU ${version#*:}: see $src (git am --abort)"
}

export_series() {
	local out prefix description cover count
	[ -d "$src/.git" ] || die "no $src: run 'scripts/guest-qemu.sh tree'"
	cd "$src"
	[ -z "$(git status --porcelain --untracked-files=no)" ] ||
		die "uncommitted changes in $src: commit them first"
	count=$(git rev-list --count base..series)
	out=$(mktemp -d)
	description=$out/description
	cover_description "$series/0000-cover-letter.patch" >"$description"
	prefix=$(cover_prefix "$series/0000-cover-letter.patch")
	local recipients=()
	while IFS= read -r line; do
		case "$line" in
		To:\ *) recipients+=("--to=${line#To: }") ;;
		Cc:\ *) recipients+=("--cc=${line#Cc: }") ;;
		esac
	done < <(grep -E '^(To|Cc): ' "$series/recipients" 2>/dev/null || true)
	git config branch.series.description "$(cat "$description")"
	git -c core.abbrev=12 -c diff.algorithm=myers -c diff.renames=true \
		-c format.signature= -c format.coverFromDescription=subject \
		format-patch -q --zero-commit --no-signature --cover-letter \
		--subject-prefix="${prefix:-PATCH}" "${recipients[@]}" \
		-o "$out/patches" base..series
	cover=$out/patches/0000-cover-letter.patch
	sed -i "0,/^Date: .*/s//Date: $(git log -1 --format=%aD series)/" "$cover"
	rm -f "$series"/0*.patch
	cp "$out"/patches/*.patch "$series/"
	rm -rf "$out"
	say "exported $count patches to patches/qemu"
}

# configure BUILDDIR LOG OPTIONS...: QEMU's configure of src for x86_64
# with KVM, for $install_prefix, the machine's firmware (outside the prefix, so
# that QEMU does not look for it relative to where it runs from), no
# download.
install_prefix=/opt/qemu-guest-callchains
configure() {
	local build=$1 log=$2
	shift 2
	qemu_build_tools "$dir/tools"
	# meson from there, also when ninja runs it.
	export PATH=$dir/tools/usr/bin:$PATH PYTHONPATH=$dir/tools/usr/lib/python3/dist-packages
	mkdir -p "$build"
	(cd "$build" &&
		"$src/configure" --prefix="$install_prefix" --target-list=x86_64-softmmu --enable-kvm \
		--firmwarepath=/usr/share/qemu:/usr/share/seabios:/usr/lib/ipxe/qemu \
		--disable-docs --disable-werror --disable-install-blobs --disable-download "$@") \
		>"$log" 2>&1 || { tail -n 20 "$log"; die "QEMU's configure failed (log: $log)"; }
}

# package OUTDIR: the qemu-guest-callchains package.  PKG_SMALL=1 (make
# check's small packages) packages the guests' build itself (build(),
# cached: the same source, configure and prefix, the devices of
# qemu/guest-devices.mak) rather than building QEMU a second time.
package() {
	local out=$1 build root version depends
	build=$out/qemu-build root=$out/qemu-root
	rm -rf "$build" "$root"
	if [ "${PKG_SMALL:-0}" = 1 ]; then
		build
		say "packaging the guests' QEMU ($GUEST_QEMU: the devices of qemu/guest-devices.mak)"
		install -D -m 755 "$GUEST_QEMU" "$root$install_prefix/bin/qemu-system-x86_64"
	else
		# A tree of its own: make check's L1 tests may run QEMU's
		# functional test from $src meanwhile.
		src=$out/qemu-src
		tree
		say "configuring QEMU for $install_prefix (QEMU's default devices; log: $out/qemu-build.log)"
		configure "$build" "$out/qemu-build.log"
		say "building the QEMU package ($(ninja -C "$build" -n | wc -l) steps)"
		ninja -C "$build" -j"$(nproc)" >>"$out/qemu-build.log" 2>&1 &&
			DESTDIR=$root ninja -C "$build" install >>"$out/qemu-build.log" 2>&1 ||
			{ tail -n 20 "$out/qemu-build.log"; die "QEMU's build failed (log: $out/qemu-build.log)"; }
	fi
	version=$("$root$install_prefix/bin/qemu-system-x86_64" --version | sed -n '1s/^QEMU emulator version \([^ ]*\).*/\1/p')
	mkdir -p "$root/DEBIAN" "$out/qemu-shlibs/debian"
	echo "Source: qemu-guest-callchains" >"$out/qemu-shlibs/debian/control"
	depends=$(cd "$out/qemu-shlibs" && dpkg-shlibdeps -O --ignore-missing-info \
		-e"$root$install_prefix/bin/qemu-system-x86_64" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
	cat >"$root/DEBIAN/control" <<EOF
Package: qemu-guest-callchains
Version: ${version}-1
Architecture: $(dpkg --print-architecture)
Maintainer: $(git -C "$src" log -1 --format='%an <%ae>')
Depends: ${depends:+$depends, }qemu-system-data, seabios, ipxe-qemu
Section: misc
Priority: optional
Description: QEMU that opts KVM guests in to guest call chains
 qemu-system-x86_64 $version with the series that sets a KVM guest's
 level of guest call chains in host perf samples: -accel
 kvm,guest-callchains=off|chain|stack, the QMP commands
 query-guest-callchains and set-guest-callchains, the HMP commands
 info guest_callchains and set_guest_callchains.  Installed under
 $install_prefix, beside the distribution's QEMU, whose firmware it uses.
EOF
	dpkg-deb --root-owner-group -Zxz -b "$root" "$out/qemu-guest-callchains_${version}-1_$(dpkg --print-architecture).deb" >/dev/null
	say "$out/qemu-guest-callchains_${version}-1_$(dpkg --print-architecture).deb"
}

build() {
	local key
	key="$GUEST_QEMU_VERSION $(cat "${patches[@]}" "$TOP/qemu/guest-devices.mak" "$0" | sha256sum | cut -c1-16)"
	if [ -x "$GUEST_QEMU" ] && [ "$(cat "$dir/version" 2>/dev/null)" = "$key" ]; then
		say "the guests' QEMU: $("$GUEST_QEMU" --version | head -n1), with patches/qemu (built before: $key)"
		return
	fi
	tree
	rm -rf "$dir/build" "$dir/root" "$dir/version"
	mkdir -p "$dir/build" "$dir/root/usr/bin"
	say "configuring the guests' qemu-system-x86_64 (KVM and TCG, the devices of qemu/guest-devices.mak; log: $dir/build.log)"
	configure "$dir/build" "$dir/build.log" --without-default-features \
		--without-default-devices --with-devices-x86_64=guest \
		--enable-tcg --enable-virtfs --enable-attr --disable-pixman --disable-fdt
	say "building it ($(ninja -C "$dir/build" -n qemu-system-x86_64 | wc -l) steps: about 5 minutes on 2 CPUs)"
	ninja -C "$dir/build" -j"$(nproc)" qemu-system-x86_64 >>"$dir/build.log" 2>&1 ||
		{ tail -n 20 "$dir/build.log"; die "QEMU's build failed"; }
	cp "$dir/build/qemu-system-x86_64" "$GUEST_QEMU"
	echo "$key" >"$dir/version"
	say "the guests' QEMU: $("$GUEST_QEMU" --version | head -n1), with the ${#patches[@]} patches of patches/qemu"
}

case "${1:-build}" in
build) build ;;
tree) tree ;;
export) export_series ;;
package) package "${2:?usage: $0 package OUTDIR}" ;;
*) die "usage: $0 [build|tree|export|package OUTDIR]" ;;
esac
