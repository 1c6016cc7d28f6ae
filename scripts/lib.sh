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

# Configure the O= directory $1 as tinyconfig plus the fragment $2 with the
# kernel's merge_config.sh, running the remaining arguments as the make
# command.  merge_config.sh only warns about options it drops: fail instead.
# Redone only when the fragment changes.
merge_fragment() {
	local obj=$1 frag=$2 line bad=0
	shift 2
	sha1sum -c --status "$obj/.fragment.sha" 2>/dev/null && [ -f "$obj/.config" ] && return 0
	say "configuring $obj: tinyconfig + ${frag#"$TOP"/}"
	"$@" tinyconfig >/dev/null
	"$TREE/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >/dev/null
	"$@" olddefconfig >/dev/null
	while IFS= read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		grep -qxF "$line" "$obj/.config" || { say "config option not set: $line"; bad=1; }
	done <"$frag"
	[ $bad -eq 0 ] || die "${frag#"$TOP"/} did not survive the merge"
	sha1sum "$frag" >"$obj/.fragment.sha"
}
