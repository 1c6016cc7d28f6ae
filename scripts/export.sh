#!/bin/bash
# Export the commits base..series of the work tree into patches/, one
# directory per postable series, with 'git format-patch', deterministically:
# unchanged commits give byte-identical files, so only real changes show up
# in the repository's history.
#
# patches/series names the series in the order the tree holds them, each
# with the series it needs ("NAME [NEEDS...]").  A commit belongs to the
# series whose patch has its subject; a new or renamed commit belongs to the
# series of the commit before it.  Each series must be one run of commits,
# in the order patches/series gives: move a commit with 'git rebase -i'.
#
# A commit's git note (refs/notes/commits) goes below its patch's '---',
# where history and bench notes belong; scripts/tree.sh gives each commit
# back the note its patch holds.
#
# Per series, patches/NAME/0000-cover-letter.patch keeps its subject (with
# the subject prefix, e.g. "PATCH v6"), its text, and the To: and Cc: of
# patches/NAME/recipients (scripts/recipients.sh); its shortlog, diffstat,
# base-commit: and prerequisite-patch-id: trailers are regenerated.
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
[ -f "$SRC/series" ] || die "no $SRC/series"

work=$(mktemp -d)
trap 'rm -rf "$work"; git for-each-ref --format="%(refname)" refs/heads/export/ | xargs -r -n1 git update-ref -d' EXIT

# Each commit's series, by the subjects of the patches it was made from.
python3 "$TOP/scripts/series-of-commits.py" "$SRC" >"$work/assignment" ||
	die "the commits of $TREE don't fall into the series of patches/series (above)"

out=$work/out
mkdir -p "$out"
cp "$SRC/series" "$out/series"
while read -r name first last needs; do
	src=$SRC/$name
	# The cover letter text: everything after the headers up to the shortlog.
	description=$work/$name.description
	if [ -f "$src/0000-cover-letter.patch" ]; then
		cover_description "$src/0000-cover-letter.patch" >"$description"
		prefix=$(cover_prefix "$src/0000-cover-letter.patch")
	else
		printf '*** SUBJECT HERE ***\n\n*** BLURB HERE ***\n' >"$description"
		prefix=PATCH
	fi
	recipients=()
	if [ -f "$src/recipients" ]; then
		while IFS= read -r line; do
			case "$line" in
			To:\ *) recipients+=("--to=${line#To: }") ;;
			Cc:\ *) recipients+=("--cc=${line#Cc: }") ;;
			esac
		done <"$src/recipients"
	fi
	git update-ref "refs/heads/export/$name" "$last"
	git config "branch.export/$name.description" "$(cat "$description")"
	mkdir -p "$out/$name"
	# The cover letter is from whoever wrote the series' last patch, not from
	# whoever exports it.
	git -c user.name="$(git log -1 --format=%an "$last")" \
		-c user.email="$(git log -1 --format=%ae "$last")" \
		-c core.abbrev=12 -c diff.algorithm=myers -c diff.renames=true \
		-c format.signature= -c format.coverFromDescription=subject \
		format-patch -q --zero-commit --no-signature --cover-letter --notes \
		--subject-prefix="${prefix:-PATCH}" "${recipients[@]}" \
		-o "$out/$name" "$first^..export/$name"
	git config --unset "branch.export/$name.description"

	cover=$out/$name/0000-cover-letter.patch
	# format-patch dates the cover letter "now": use the newest patch date.
	sed -i "0,/^Date: .*/s//Date: $(git log -1 --format=%aD "$last")/" "$cover"
	# What a maintainer needs to apply it: the base, and the patches of the
	# series it needs, by patch id (as 'format-patch --base' writes them).
	{
		echo
		echo "base-commit: $(git rev-parse "base^{commit}")"
		for need in $needs; do
			awk -v s="$need" '$1 == s { print $2 }' "$work/assignment" |
				while read -r c; do
					git show "$c" | git patch-id --stable | awk '{ print "prerequisite-patch-id: " $1 }'
				done
		done
	} >>"$cover"
	(cd "$out/$name" && ls -1 -- *.patch) >"$out/$name/series"
	[ ! -f "$src/recipients" ] || cp "$src/recipients" "$out/$name/recipients"
done < <(python3 "$TOP/scripts/series-of-commits.py" --runs "$SRC" <"$work/assignment")

mkdir -p "$PATCHES"
rm -f "$PATCHES"/*.patch
while read -r name _; do
	rm -rf "${PATCHES:?}/$name"
	mv "$out/$name" "$PATCHES/$name"
done < <(grep -v -e '^#' -e '^$' "$out/series")
cp "$out/series" "$PATCHES/series"
say "exported $count patches in $(grep -c -v -e '^#' -e '^$' "$out/series") series to $PATCHES"
