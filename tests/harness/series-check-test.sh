#!/bin/bash
# scripts/series-check.sh on made-up series: "c" needs "b", which needs
# "a", each changing the line the one before it changed, and "d" needs
# nothing.  Each must apply with all it needs, directly or through
# another (c with a and b), and after the others that don't need it; a
# check that takes only the series named on a series' own line applies c
# without a and fails.  And a series that doesn't apply after what it
# needs must fail the check.
set -euo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
top=$scratch/top
tree=$scratch/tree
mkdir -p "$top/patches" "$tree"
cp -r "$TOP/scripts" "$TOP/config" "$top/"

git -C "$tree" init -q
printf 'x0\n' >"$tree/line"
printf 'y0\n' >"$tree/other"
git -C "$tree" add line other
git -C "$tree" -c user.name=t -c user.email=t@t commit -q -m base
git -C "$tree" tag base

# A series NAME of one patch changing FILE from FROM to TO.
series() {
	local name=$1 file=$2 from=$3 to=$4
	mkdir -p "$top/patches/$name"
	printf '0001-change.patch\n' >"$top/patches/$name/series"
	cat >"$top/patches/$name/0001-change.patch" <<PATCH
From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
Subject: [PATCH] $name

---
diff --git a/$file b/$file
--- a/$file
+++ b/$file
@@ -1 +1 @@
-$from
+$to
PATCH
}
series a line x0 x1
series b line x1 x2
series c line x2 x3
series d other y0 y1
printf 'a\nb a\nc b\nd\n' >"$top/patches/series"

out=$(TREE=$tree bash "$top/scripts/series-check.sh" 2>&1) || {
	echo "FAILED: series-check refused series that apply as patches/series says:"
	echo "$out"
	exit 1
}
grep -q "c applies on the base with what it needs: a b" <<<"$out" || {
	echo "FAILED: series-check didn't apply c with a and b:"
	echo "$out"
	exit 1
}

# c now changes a line b doesn't leave: it must fail.
series c line x1 x3
if out=$(TREE=$tree bash "$top/scripts/series-check.sh" 2>&1); then
	echo "FAILED: series-check passed a series that doesn't apply after what it needs:"
	echo "$out"
	exit 1
fi
grep -q "c/0001-change.patch does not apply" <<<"$out" || {
	echo "FAILED: series-check didn't say which patch doesn't apply:"
	echo "$out"
	exit 1
}
echo "ok: series-check applies a series with all it needs, and fails one that doesn't apply"
