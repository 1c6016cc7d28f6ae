#!/bin/bash
# A commit's note survives 'make export' then 'make tree': scripts/export.sh
# writes it below the patch's '---' (git format-patch --notes), and
# scripts/tree.sh gives it back with lib.sh's am_with_notes,
# so that a patch with history and bench notes exports to itself byte for
# byte.  A patch without notes gives no note, and a changelog line that
# reads "Notes:" is not one.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

g() { git -c user.name=T -c user.email=t@example.org "$@"; }
export GIT_AUTHOR_DATE="2026-01-01T00:00:00Z" GIT_COMMITTER_DATE="2026-01-01T00:00:00Z"
mkdir "$tmp/a" && cd "$tmp/a" && g init -q && echo 1 >f && g add f && g commit -q -m base
g tag base
echo 2 >>f && g commit -q -a -m "change one" -m "Why it is done."
g notes add -m "v7: it was done otherwise." -m "Measured: 1.2x, 31 repetitions." HEAD
echo 3 >>f && g commit -q -a -m "change two" -m "Notes:" -m "A changelog line, not a note."
g format-patch -q --zero-commit --notes -o "$tmp/p1" base..HEAD

g clone -q "$tmp/a" "$tmp/b" && cd "$tmp/b" && g checkout -q -B series base
git config user.name T && git config user.email t@example.org
for p in "$tmp"/p1/*.patch; do
	am_with_notes "$p" || { bad "git am $p"; exit 1; }
done
g format-patch -q --zero-commit --notes -o "$tmp/p2" base..HEAD

if diff -r "$tmp/p1" "$tmp/p2" >"$tmp/diff"; then
	ok "two patches, one with a note of two paragraphs, export to themselves"
else
	bad "the patches differ after the round trip: $(head -n 20 "$tmp/diff")"
fi
if [ "$(g notes show HEAD~1 2>/dev/null)" = "$(printf 'v7: it was done otherwise.\n\nMeasured: 1.2x, 31 repetitions.')" ]; then
	ok "the note is back on its commit"
else
	bad "the note of 'change one' is '$(g notes show HEAD~1 2>&1)'"
fi
if g notes show HEAD >/dev/null 2>&1; then
	bad "'change two' got a note from its changelog"
else
	ok "a changelog's 'Notes:' line makes no note"
fi
exit $fail
