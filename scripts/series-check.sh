#!/bin/bash
# Check that each postable series applies as its cover letter says: on the
# base with only the series it needs (patches/series), and last, after all
# the other series that don't need it.  Applies to a scratch index of the
# work tree's base commit ('git apply --cached'), so no checkout is made.
#
#   scripts/series-check.sh     prints one line per check, fails on any
set -euo pipefail
. "$(dirname "$0")/lib.sh"

cd "$TREE"
git rev-parse -q --verify refs/tags/base >/dev/null || die "no base commit in $TREE: run 'make tree'"
index=$(mktemp)
trap 'rm -f "$index"' EXIT

# Apply the series named in the arguments, in that order, to the base.
applies() {
	local name patch
	rm -f "$index"
	GIT_INDEX_FILE=$index git read-tree base
	for name; do
		while read -r patch; do
			GIT_INDEX_FILE=$index git apply --cached "$TOP/patches/$name/$patch" 2>/dev/null || {
				echo "$name/$patch does not apply after: $*"
				return 1
			}
		done < <(grep -v -e '^#' -e '^$' -e '^0000-' "$TOP/patches/$name/series")
	done
}

# Whether series $1 needs series $2, directly or through another.
depends() {
	local need
	for need in $(series_needs "$1"); do
		[ "$need" = "$2" ] && return 0
		depends "$need" "$2" && return 0
	done
	return 1
}

# The series $1 needs, directly or not, in the order of patches/series.
all_needs() {
	local other
	for other in $(series_names); do
		! depends "$1" "$other" || echo "$other"
	done
}

failed=0
for name in $(series_names); do
	# shellcheck disable=SC2046
	if applies $(all_needs "$name") "$name"; then
		say "$name applies on the base with what it needs: $(all_needs "$name" | tr '\n' ' ')"
	else
		failed=1
	fi
	others=$(for other in $(series_names); do
		[ "$other" = "$name" ] || depends "$other" "$name" || echo "$other"
	done)
	# shellcheck disable=SC2086
	if applies $others "$name"; then
		say "$name applies after $(echo $others)"
	else
		failed=1
	fi
done
exit $failed
