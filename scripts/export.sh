#!/bin/bash
# Export the commits base..series of the work tree into patches/ with
# 'git format-patch', deterministically: unchanged commits give byte-identical
# files, so only real changes show up in the repository's history.
#
# The cover letter's subject and text are kept from the existing
# patches/0000-cover-letter.patch (edit them there); its shortlog and
# diffstat are regenerated.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PATCHES=${PATCHES:-$TOP/patches}
SRC=$TOP/patches
cd "$TREE"
git rev-parse -q --verify refs/heads/series >/dev/null || die "no branch 'series' in $TREE: run 'make tree'"
[ -z "$(git status --porcelain --untracked-files=no)" ] ||
	die "uncommitted changes in $TREE: commit them first (one logical change per commit)"
count=$(git rev-list --count base..series)
[ "$count" -gt 0 ] || die "no commits on top of base"

# The cover letter text: everything after the headers up to the shortlog.
description=$(mktemp)
trap 'rm -f "$description"' EXIT
if [ -f "$SRC/0000-cover-letter.patch" ]; then
	awk '
		/^Subject: / { sub(/^Subject: \[[^]]*\] /, ""); subject = $0; next }
		subject != "" && !body && /^$/ { body = 1; print subject; print ""; next }
		body && /^[^ ].* \([0-9]+\):$/ { exit }
		body { print }
	' "$SRC/0000-cover-letter.patch" >"$description"
else
	printf '*** SUBJECT HERE ***\n\n*** BLURB HERE ***\n' >"$description"
fi
git config branch.series.description "$(cat "$description")"

out=$(mktemp -d)
git -c core.abbrev=12 -c diff.algorithm=myers -c diff.renames=true \
	-c format.signature= -c format.coverFromDescription=subject \
	format-patch -q --zero-commit --no-signature --cover-letter \
	--subject-prefix=PATCH -o "$out" base..series

# format-patch dates the cover letter "now": use the newest patch date instead.
last=$(git log -1 --format=%aD series)
sed -i "0,/^Date: .*/s//Date: $last/" "$out/0000-cover-letter.patch"
# A generated cover letter ends its text with a blank line before the
# shortlog; keep exactly one.
mkdir -p "$PATCHES"
rm -f "$PATCHES"/*.patch
(cd "$out" && ls -1 -- *.patch) >"$PATCHES/series"
mv "$out"/*.patch "$PATCHES/"
rmdir "$out"
say "exported $count patches and the cover letter to $PATCHES"
