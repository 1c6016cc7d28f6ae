#!/bin/bash
# Debian's cloud kernel of the base's series ($LINUX_SERIES, from
# $LINUX_DEB_SUITE, config/base.conf): an image in the ORC format of the
# kernel the series is for, whose registers 7.3 renumbered, for perf's ORC
# test beside the demo guest's older kernel (scripts/all-tests.sh's
# perf/orc-stock-kernel).  Downloaded, never installed, with the apt state
# of scripts/source.sh; its vmlinuz and release go to $ORC_IMAGE.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

SRC=$BUILD/source
if [ -s "$ORC_IMAGE/vmlinuz" ] && [ "$(cat "$ORC_IMAGE/version" 2>/dev/null)" = "$LINUX_DEB_VERSION" ]; then
	say "Debian's $LINUX_SERIES cloud kernel at $ORC_IMAGE"
	exit 0
fi
apt_suite_init "$SRC" "$LINUX_DEB_SUITE"
# The image is in linux-binary-<ABI>-cloud-amd64 (linux-image-* only
# depends on it); take the one of the pinned version, else the newest.
mapfile -t packages < <(apt_suite_cache "$SRC" search --names-only \
	"^linux-binary-${LINUX_SERIES//./\\.}\\.[0-9.]+\\+deb[0-9]+-cloud-amd64\$" | cut -d' ' -f1 | sort -V)
[ ${#packages[@]} -gt 0 ] || die "$LINUX_DEB_SUITE serves no linux-binary-$LINUX_SERIES.*-cloud-amd64"
# PACKAGE=VERSION, the pinned version's, else the newest.
pick=$(for p in "${packages[@]}"; do
	apt_suite_versions "$SRC" "$p" | sort -V | sed "s|^|$p=|"
done | pick_pinned "$LINUX_SERIES cloud kernel" "$LINUX_DEB_VERSION" ".*=") ||
	die "$LINUX_DEB_SUITE serves no $LINUX_SERIES cloud kernel"
package=${pick%%=*} version=${pick#*=}
say "downloading $package $version (Debian's $LINUX_SERIES cloud kernel, about 14 MB)"
rm -rf "$ORC_IMAGE"
mkdir -p "$ORC_IMAGE/deb"
(cd "$ORC_IMAGE/deb" && apt_suite "$SRC" download "$package=$version" >/dev/null) ||
	die "could not download $package $version"
dpkg-deb --fsys-tarfile "$ORC_IMAGE"/deb/*.deb | tar -x -C "$ORC_IMAGE/deb" --wildcards '*/vmlinuz'
find "$ORC_IMAGE/deb" -name vmlinuz -type f -exec mv {} "$ORC_IMAGE/vmlinuz" \;
rm -rf "$ORC_IMAGE/deb"
[ -s "$ORC_IMAGE/vmlinuz" ] || die "$package has no vmlinuz"
echo "$version" >"$ORC_IMAGE/version"
say "Debian's $LINUX_SERIES cloud kernel ($package $version) at $ORC_IMAGE"
