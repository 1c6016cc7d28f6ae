#!/bin/bash
# The contributor workflow, end to end, on a throw-away clone of the work
# tree: change one line of an earlier patch in the tree, commit it as a
# fixup, rebase, export with scripts/export.sh, and check that exactly that
# patch changed, with its series' cover letter (diffstat) and those of the
# series that need it (prerequisite-patch-id).  A sparse checkout keeps it
# to a few seconds.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
clone=$scratch/linux

# A file that only one patch touches, so that exactly one patch must change.
patch= file=
for p in $(series_patches); do
	for f in $(sed -n 's|^+++ b/||p' "$TOP/patches/$p"); do
		if [ "$(grep -l -x -F -- "+++ b/$f" "$TOP"/patches/*/0*.patch | wc -l)" -eq 1 ]; then
			patch=$p file=$f
			break 2
		fi
	done
done
[ -n "$patch" ] || { echo "no file is touched by only one patch"; exit 1; }

git clone -q --shared --no-checkout "$TREE" "$clone"
cd "$clone"
git config user.name "Workflow test" && git config user.email "workflow@test"
# .gitattributes too: its "diff=cpp" shapes the hunk headers of exported C.
git sparse-checkout set --no-cone "/$file" /.gitattributes >/dev/null
git checkout -q -B series origin/series
# The commits' notes, below their patches' '---', as scripts/tree.sh keeps
# them through the rebase.
git fetch -q origin 'refs/notes/*:refs/notes/*'
git config notes.rewriteRef refs/notes/commits

# The one-line change a contributor makes in the materialised tree.
echo "/* workflow test */" >>"$file"
git commit -q -a --fixup="$(git log --format=%H base..series -- "$file" | tail -n 1)"
GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash base

TREE=$clone PATCHES=$scratch/patches bash "$TOP/scripts/export.sh" >/dev/null
changed=$( (diff -rq -x qemu "$TOP/patches" "$scratch/patches" || true) | awk '{print $2}' |
	sed "s|^$TOP/patches/||" | sort | tr '\n' ' ')
# The patch, its series' cover letter (diffstat), and the cover letters of
# the series that need it (prerequisite-patch-id).
series=${patch%%/*}
# shellcheck disable=SC2046
expected=$(printf '%s\n' "$patch" "$series/0000-cover-letter.patch" \
	$(series_needing "$series" | sed 's|$|/0000-cover-letter.patch|') | sort | tr '\n' ' ')
if [ "$changed" != "$expected" ]; then
	echo "expected only '$expected' to change, got '$changed'"
	exit 1
fi
grep -q '^+/\* workflow test \*/$' "$scratch/patches/$patch" ||
	{ echo "the change is not in $patch"; exit 1; }
echo "a one-line change to $file landed in $patch and nowhere else"
