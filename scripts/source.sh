#!/bin/bash
# Install the pinned Debian linux-source package and make the base commit of
# the work tree from it.  Prints the version it used; falls back to the newest
# 6.12 Debian serves, loudly, when the pinned one is gone.
#
# The base commit is made with a fixed author and date, so the same source
# gives the same base commit id on every machine.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

pkg=linux-source-$LINUX_SERIES

installed=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
if [ "$installed" != "$LINUX_DEB_VERSION" ]; then
	as_root apt-get update -q >/dev/null
	if apt-cache madison "$pkg" | awk '{print $3}' | grep -qxF "$LINUX_DEB_VERSION"; then
		want=$LINUX_DEB_VERSION
	else
		want=$(apt-cache madison "$pkg" | awk 'NR == 1 {print $3}')
		[ -n "$want" ] || die "Debian serves no $pkg package"
		say "WARNING: pinned $pkg $LINUX_DEB_VERSION is no longer served; using $want"
		say "WARNING: update config/base.conf once the series is checked against it"
	fi
	if [ "$installed" != "$want" ]; then
		say "installing $pkg=$want"
		as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
			--no-install-recommends --allow-downgrades "$pkg=$want" >/dev/null
	fi
	installed=$want
fi
say "base: Debian $pkg $installed"

tarball=/usr/src/linux-source-$LINUX_SERIES.tar.xz
[ -f "$tarball" ] || die "$tarball missing after installing $pkg"

# The base commit records the package version; reuse it when it matches.
if [ -d "$TREE/.git" ] && git -C "$TREE" rev-parse -q --verify refs/tags/base >/dev/null &&
	[ "$(git -C "$TREE" tag -l --format='%(contents:subject)' base)" = "$pkg $installed" ]; then
	say "base commit present in $TREE"
	exit 0
fi

rm -rf "$TREE"
mkdir -p "$TREE"
say "extracting $tarball"
tar -xJf "$tarball" -C "$TREE" --strip-components=1

# Debian's packaging appends "/*" ("ignore everything at the top level") to
# the top-level .gitignore, which hides new files from git.  Drop Debian's
# additions so the tree behaves like upstream; the series never touches
# .gitignore, so it still applies to any 6.12 tree.
if grep -qxF '/*' "$TREE/.gitignore"; then
	sed -i '\#^/\*$#d; \#^!/#d' "$TREE/.gitignore"
fi

kernelversion=$(make -s -C "$TREE" kernelversion)
say "committing base (Linux $kernelversion), about a minute"
export GIT_AUTHOR_NAME="Debian kernel team" GIT_AUTHOR_EMAIL="debian-kernel@lists.debian.org"
export GIT_COMMITTER_NAME=$GIT_AUTHOR_NAME GIT_COMMITTER_EMAIL=$GIT_AUTHOR_EMAIL
export GIT_AUTHOR_DATE="2025-01-01T00:00:00Z" GIT_COMMITTER_DATE="2025-01-01T00:00:00Z"
cd "$TREE"
git init -q -b base-$LINUX_SERIES
git config core.autocrlf false
git config gc.auto 0
git add -f -A .
git commit -q -m "Linux $kernelversion" -m "Debian $pkg $installed, as extracted from $tarball."
git tag -a -m "$pkg $installed" base
say "base commit $(git rev-parse --short HEAD) (Linux $kernelversion)"
