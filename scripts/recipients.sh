#!/bin/bash
# Write patches/NAME/recipients, the To: and Cc: of each series, from the
# kernel's scripts/get_maintainer.pl over the series' patches: maintainers
# and supporters To:, reviewers and lists Cc:.  scripts/export.sh puts them
# into every patch of the series, so that 'git send-email' or b4 can send
# it as it is.  The QEMU series (patches/qemu) the same way, from QEMU's
# get_maintainer.pl in the guests' QEMU tree (scripts/guest-qemu.sh tree),
# which scripts/guest-qemu.sh export puts into its patches.
#
# The lines from "# Also" on are kept: people to Cc: beyond what
# get_maintainer.pl says (the reviewers of earlier versions), and "Drop:"
# lines, an address get_maintainer.pl names for no good reason, with why.
#
#   scripts/recipients.sh           write them
#   scripts/recipients.sh --check   say which series' file is out of date
set -euo pipefail
. "$(dirname "$0")/lib.sh"

# recipients NAME TREE: the file's text for series NAME, whose patches are
# on stdin, from TREE's scripts/get_maintainer.pl.
recipients() {
	local name=$1 tree=$2 file=$TOP/patches/$1/recipients also drops fixes=
	# QEMU's has no --fixes (the kernel's Cc:s the authors of what a
	# Fixes: tag names).
	[ "$name" = qemu ] || fixes=--no-fixes
	also=$(sed -n '/^# Also/,$p' "$file" 2>/dev/null || true)
	drops=$(sed -n 's/^Drop: *\([^ ]*\).*/\1/p' <<<"$also")
	echo "# To and Cc of the $name series: scripts/recipients.sh writes this file"
	echo "# from scripts/get_maintainer.pl and keeps the lines from \"# Also\" on."
	# get_maintainer.pl gives each address its first role only: ask it
	# patch by patch, so that whoever maintains what any patch touches is
	# To: (a KVM x86 maintainer is a reviewer of generic KVM); without the
	# patch's mail headers, which the last export wrote.  With Perl's hash
	# order fixed: get_maintainer.pl's answer comes in hash order, which
	# Perl randomizes run by run, and so would what this writes (the
	# vcpu-host file failed --check in one run of two).
	while read -r patch; do
			sed '1,/^$/d' "$patch" >"$body"
			(cd "$tree" && PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 \
				scripts/get_maintainer.pl --no-git --no-git-fallback \
				--no-keywords $fixes --rolestats "$body") 2>/dev/null
		done |
		grep -v -F -f <(printf '%s\n' "${drops:-//none//}") |
		awk '
			{
				to = $0 ~ /\((maintainer|supporter)[:)]/
				sub(/ \(.*$/, "")
				if (!($0 in seen)) { seen[$0] = 1; order[n++] = $0 }
				if (to) is_to[$0] = 1
			}
			END { for (i = 0; i < n; i++) print (order[i] in is_to ? "To: " : "Cc: ") order[i] }
		'
	[ -z "$also" ] || printf '%s\n' "$also"
}

# update NAME TREE: write (or with --check, compare) series NAME's file.
update() {
	local name=$1 tree=$2
	if [ "$mode" = --check ]; then
		if ! diff -u "$TOP/patches/$name/recipients" <(recipients "$name" "$tree") >&2; then
			say "patches/$name/recipients is not what get_maintainer.pl says: run scripts/recipients.sh and make export"
			stale=1
		fi
	else
		recipients "$name" "$tree" >"$TOP/patches/$name/recipients.new"
		mv "$TOP/patches/$name/recipients.new" "$TOP/patches/$name/recipients"
		say "patches/$name/recipients: $(grep -c '^To: ' "$TOP/patches/$name/recipients") To, $(grep -c '^Cc: ' "$TOP/patches/$name/recipients") Cc"
	fi
}

mode=${1:-}
[ -x "$TREE/scripts/get_maintainer.pl" ] || die "no $TREE/scripts/get_maintainer.pl: run 'make tree'"
[ -x "$GUEST_QEMU_DIR/src/scripts/get_maintainer.pl" ] ||
	die "no $GUEST_QEMU_DIR/src/scripts/get_maintainer.pl: run 'scripts/guest-qemu.sh tree'"
body=$(mktemp)
trap 'rm -f "$body"' EXIT
stale=0
for name in $(series_names); do
	update "$name" "$TREE" < <(series_patches | grep "^$name/" | sed "s|^|$TOP/patches/|")
done
update qemu "$GUEST_QEMU_DIR/src" < <(ls "$TOP"/patches/qemu/0*.patch | grep -v '/0000-')
exit $stale
