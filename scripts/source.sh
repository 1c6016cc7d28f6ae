#!/bin/bash
# Fetch the pinned Debian linux-source package and make the base commit of
# the work tree from it; or, with LINUX_SRC= a $LINUX_SERIES kernel tree (a
# git tree: its HEAD; or a plain directory) or tarball (kernel.org's
# linux-$LINUX_SERIES.tar.xz, say), make it from that, where the Debian
# package can't be fetched (a host without a Debian mirror: Ubuntu).  Prints the version it used; falls back to the newest
# $LINUX_SERIES.x the suite serves, loudly, when the pinned one is gone.
#
# The package comes from $LINUX_DEB_SUITE (config/base.conf), which need not
# be the machine's release: it is an architecture-independent tarball, so it
# is downloaded (not installed) with apt state of its own under
# $BUILD/source, from the Debian mirror the machine's apt sources name.  The
# machine's apt configuration and libraries are left alone.
#
# The base commit is made with a fixed author and date, so the same source
# gives the same base commit id on every machine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkg=linux-source-$LINUX_SERIES
SRC=$BUILD/source
mkdir -p "$SRC"

# What the base is made from, as the base tag says it.
if [ -n "${LINUX_SRC:-}" ]; then
	[ -e "$LINUX_SRC" ] || die "LINUX_SRC=$LINUX_SRC: no such tree or tarball"
	LINUX_SRC=$(realpath "$LINUX_SRC")
	origin="LINUX_SRC $LINUX_SRC"
	say "base: $LINUX_SRC"
else
	deb=$SRC/${pkg}_${LINUX_DEB_VERSION//:/%3a}_all.deb
	if [ -f "$deb" ]; then
		version=$LINUX_DEB_VERSION
	else
		apt_suite_init "$SRC" "$LINUX_DEB_SUITE"
		version=$(apt_suite_versions "$SRC" "$pkg" | grep -E "^$LINUX_SERIES\." | sort -V |
			pick_pinned "$pkg" "$LINUX_DEB_VERSION") || die "$LINUX_DEB_SUITE serves no $pkg package"
		deb=$SRC/${pkg}_${version//:/%3a}_all.deb
		say "downloading $pkg $version (about 170 MB)"
		(cd "$SRC" && apt_suite "$SRC" download "$pkg=$version" >/dev/null) || die "could not download $pkg $version"
		[ -f "$deb" ] || die "$deb missing after downloading $pkg $version"
	fi
	say "base: Debian $pkg $version"
	origin="$pkg $version"
fi

if [ -d "$TREE/.git" ] && git -C "$TREE" rev-parse -q --verify refs/tags/base >/dev/null &&
	[ "$(git -C "$TREE" tag -l --format='%(contents:subject)' base)" = "$origin" ]; then
	say "base commit present in $TREE"
	exit 0
fi

rm -rf "$TREE"
mkdir -p "$TREE"
if [ -z "${LINUX_SRC:-}" ]; then
	say "extracting $pkg's tarball"
	dpkg-deb --fsys-tarfile "$deb" | tar -xO "./usr/src/$pkg.tar.xz" |
		tar -xJ -C "$TREE" --strip-components=1
elif [ -d "$LINUX_SRC/.git" ]; then
	say "copying $LINUX_SRC at its HEAD ($(git -C "$LINUX_SRC" log -1 --format='%h %s'))"
	git -C "$LINUX_SRC" archive --format=tar HEAD | tar -x -C "$TREE"
elif [ -d "$LINUX_SRC" ]; then
	say "copying $LINUX_SRC"
	cp -a "$LINUX_SRC/." "$TREE/"
else
	say "extracting $LINUX_SRC"
	tar -xf "$LINUX_SRC" -C "$TREE" --strip-components=1 || die "LINUX_SRC=$LINUX_SRC: not a tarball tar reads"
fi
[ -f "$TREE/Makefile" ] && [ -d "$TREE/arch/x86" ] || die "no kernel tree in ${LINUX_SRC:-$deb}"

# Debian's packaging appends "/*" ("ignore everything at the top level") to
# the top-level .gitignore, which hides new files from git.  Drop Debian's
# additions so the tree behaves like upstream; the series never touches
# .gitignore, so it still applies to any $LINUX_SERIES tree.
if grep -qxF '/*' "$TREE/.gitignore"; then
	sed -i '\#^/\*$#d; \#^!/#d' "$TREE/.gitignore"
fi

kernelversion=$(make -s -C "$TREE" kernelversion)
case $kernelversion in
"$LINUX_SERIES" | "$LINUX_SERIES".* | "$LINUX_SERIES"-*) ;;
*) die "${LINUX_SRC:-$deb} is Linux $kernelversion, not $LINUX_SERIES: the series are for $LINUX_SERIES" ;;
esac
say "committing base (Linux $kernelversion), about a minute"
export GIT_AUTHOR_NAME="Debian kernel team" GIT_AUTHOR_EMAIL="debian-kernel@lists.debian.org"
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"
cd "$TREE"
git init -q -b base-$LINUX_SERIES
git config core.autocrlf false
git config gc.auto 0
git add -f -A .
if [ -n "${LINUX_SRC:-}" ]; then
	git commit -q -m "Linux $kernelversion" -m "From $LINUX_SRC (LINUX_SRC)."
else
	git commit -q -m "Linux $kernelversion" -m "Debian $pkg $version, as fetched from $LINUX_DEB_SUITE."
fi
git tag -a -m "$origin" base
say "base commit $(git rev-parse --short HEAD) (Linux $kernelversion)"
