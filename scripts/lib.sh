# Shared by the scripts under scripts/: paths, the pinned base, logging.
# shellcheck shell=bash
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$TOP/config/base.conf"
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}
OUT=${OUT:-$BUILD/out}
export CCACHE_DIR=${CCACHE_DIR:-$BUILD/ccache}

say() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }
die() { printf '[%s] error: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1; }

# Run one named stage and print how long it took.
stage() {
	local name=$1 start rc=0
	shift
	start=$(date +%s)
	printf '=== stage %s: start\n' "$name"
	"$@" || rc=$?
	printf '=== stage %s: %s in %ds\n' "$name" \
		"$([ $rc -eq 0 ] && echo done || echo FAILED)" $(($(date +%s) - start))
	return $rc
}
