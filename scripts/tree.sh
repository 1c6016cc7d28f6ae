#!/bin/bash
# Materialise the work tree: the base commit (scripts/source.sh), then every
# series of patches/series in its order, each patch of patches/NAME/series
# applied with 'git am', one commit each, on the branch 'series'.
#
# Idempotent: a tree whose commits already export to exactly patches/ is left
# alone.  A tree that still exports to the patches it was made from, while
# patches/ moved on (a pull), is made again.  A tree holding commits that are
# not exported yet is never thrown away unless FORCE=1.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

bash "$TOP/scripts/source.sh"
cd "$TREE"

identity() {
	git config user.name >/dev/null 2>&1 ||
		git config user.name "$(git -C "$TOP" config user.name || echo "Guest callchain developers")"
	git config user.email >/dev/null 2>&1 ||
		git config user.email "$(git -C "$TOP" config user.email || echo "nobody@localhost")"
}
identity
# A commit's note, what its patch holds below '---', follows it through
# rebases and amends.
git config notes.rewriteRef refs/notes/commits

# What the tree was made from: a digest of the patches, cover letters aside.
stamp=$(git rev-parse --git-dir)/materialised-from
digest() { (cd "$1" && series_patches . | xargs cat series | sha256sum | cut -d' ' -f1); }

if git rev-parse -q --verify refs/heads/series >/dev/null; then
	if [ "${FORCE:-0}" != 1 ]; then
		scratch=$(mktemp -d)
		trap 'rm -rf "$scratch"' EXIT
		PATCHES=$scratch bash "$TOP/scripts/export.sh" >/dev/null
		# patches/qemu is QEMU's, not this tree's (scripts/guest-qemu.sh).
		if diff -r -q -x cover-description.txt -x qemu "$scratch" "$TOP/patches" >/dev/null 2>&1 &&
			[ -z "$(git status --porcelain --untracked-files=no)" ]; then
			say "tree at $TREE already matches patches/ ($(git rev-list --count base..series) commits)"
			exit 0
		fi
		if [ -z "$(git status --porcelain --untracked-files=no)" ] &&
			[ "$(digest "$scratch")" = "$(cat "$stamp" 2>/dev/null)" ]; then
			say "patches/ changed since the tree was made, which holds no work of its own: making it again"
		else
			die "the tree has commits or changes that differ from patches/: 'make export' them, or 'make tree FORCE=1' to discard them"
		fi
	fi
	git am --abort >/dev/null 2>&1 || true
fi

git checkout -q -f -B series base
git clean -q -f -d
git update-ref -d refs/notes/commits 2>/dev/null || true
n=0
while read -r patch; do
	am_with_notes "$TOP/patches/$patch" || die "patches/$patch does not apply; see 'git -C $TREE am --show-current-patch'"
	n=$((n + 1))
done < <(series_patches "$TOP/patches")
digest "$TOP/patches" >"$stamp"
say "tree at $TREE: base + $n patches of $(series_names "$TOP/patches" | wc -l) series on branch 'series'"
