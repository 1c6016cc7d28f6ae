#!/bin/bash
# The contributor workflow, end to end, on a throw-away clone of the work
# tree: change one line of an earlier patch in the tree, commit it as a
# fixup, rebase, export with scripts/export.sh, and check that exactly that
# patch (and the cover letter's diffstat) changed.  A sparse checkout keeps it
# to a few seconds.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
clone=$scratch/linux

# A file that only one patch touches, so that exactly one patch must change.
patch= file=
for p in $(grep -v -e '^#' -e '^$' -e '^0000-' "$TOP/patches/series"); do
	for f in $(sed -n 's|^+++ b/||p' "$TOP/patches/$p"); do
		if [ "$(grep -l -x -F -- "+++ b/$f" "$TOP"/patches/0*.patch | wc -l)" -eq 1 ]; then
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

# The one-line change a contributor makes in the materialised tree.
echo "/* workflow test */" >>"$file"
git commit -q -a --fixup="$(git log --format=%H base..series -- "$file" | tail -n 1)"
GIT_SEQUENCE_EDITOR=: git rebase -q -i --autosquash base

mkdir "$scratch/patches"
cp "$TOP/patches/0000-cover-letter.patch" "$scratch/patches/"
TREE=$clone PATCHES=$scratch/patches bash "$TOP/scripts/export.sh" >/dev/null
changed=$( (diff -rq "$TOP/patches" "$scratch/patches" || true) | awk '{print $2}' | xargs -n1 basename | sort | tr '\n' ' ')
expected=$(printf '%s\n' 0000-cover-letter.patch "$(basename "$patch")" | sort | tr '\n' ' ')
if [ "$changed" != "$expected" ]; then
	echo "expected only '$expected' to change, got '$changed'"
	exit 1
fi
grep -q '^+/\* workflow test \*/$' "$scratch/patches/$patch" ||
	{ echo "the change is not in $patch"; exit 1; }
echo "a one-line change to $file landed in $patch and nowhere else"
