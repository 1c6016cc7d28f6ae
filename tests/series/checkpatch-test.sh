#!/bin/bash
# checkpatch.pl --strict on every patch of the series (make check's stage
# series/checkpatch): a "PASS|FAIL checkpatch/SERIES/PATCH" line each, to
# $STAGE_RESULTS, with checkpatch's complaints below a failure; and no
# file a patch creates without a MAINTAINERS entry that covers it.  Exit
# status 1 if any patch failed.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"
log=$(mktemp)
trap 'rm -f "$log"' EXIT

# Files patch $1 creates that no MAINTAINERS entry covers: print them and fail.
unmaintained_files() {
	local file bad=0
	for file in $(sed -n 's/^ create mode [0-7]* //p' "$1"); do
		(cd "$TREE" && scripts/get_maintainer.pl --no-git --no-rolestats -f "$file" 2>/dev/null) |
			grep -q '@' && continue
		echo "$file: no MAINTAINERS entry covers it"
		bad=1
	done
	return $bad
}

failed=0
while read -r p; do
	# In patches that touch only tools/perf (and MAINTAINERS), two
	# checks misfire on perf's own conventions: perf test reads a shell test's
	# description from line 2, so SPDX goes on line 3; and libc's
	# names (PRIx64, Dl_info, Elf64_Ehdr) are not CamelCase of ours.
	ignore=
	if ! grep -qv -e '^tools/perf/' -e '^MAINTAINERS$' < <(sed -n 's|^+++ b/||p' "$TOP/patches/$p"); then
		ignore="--ignore CAMELCASE,SPDX_LICENSE_TAG"
	fi
	# The series adds no MAINTAINERS entry of its own: checkpatch's
	# question about new files is answered by unmaintained_files.
	# The base commit is a release tarball without upstream history,
	# so checkpatch can't find the commits Fixes: tags name (they are
	# upstream's; the cover letter lists them).
	ignore="$ignore --ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID"
	# shellcheck disable=SC2086
	if "$TREE/scripts/checkpatch.pl" --strict --quiet --no-tree $ignore \
		"$TOP/patches/$p" >"$log" 2>&1 &&
		unmaintained_files "$TOP/patches/$p" >>"$log"; then
		echo "PASS checkpatch/$p" | tee -a "$STAGE_RESULTS"
	else
		echo "FAIL checkpatch/$p" | tee -a "$STAGE_RESULTS"
		sed 's/^/    | /' "$log"
		failed=1
	fi
done < <(series_patches)
exit $failed
