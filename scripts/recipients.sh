#!/bin/bash
# Write patches/NAME/recipients, the To: and Cc: of each series, from the
# kernel's scripts/get_maintainer.pl over the series' patches: maintainers
# and supporters To:, reviewers and lists Cc:.  scripts/export.sh puts them
# into every patch of the series, so that 'git send-email' or b4 can send
# it as it is.
#
# The lines from "# Also" on are kept: people to Cc: beyond what
# get_maintainer.pl says (the reviewers of earlier versions), and "Drop:"
# lines, an address get_maintainer.pl names for no good reason, with why.
#
#   scripts/recipients.sh           write them
#   scripts/recipients.sh --check   say which series' file is out of date
set -euo pipefail
. "$(dirname "$0")/lib.sh"

recipients() {
	local name=$1 file=$TOP/patches/$1/recipients also drops
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
	series_patches | grep "^$name/" | sed "s|^|$TOP/patches/|" |
		while read -r patch; do
			sed '1,/^$/d' "$patch" >"$body"
			(cd "$TREE" && PERL_HASH_SEED=0 PERL_PERTURB_KEYS=0 \
				scripts/get_maintainer.pl --no-git --no-git-fallback \
				--no-keywords --no-fixes --rolestats "$body") 2>/dev/null
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

[ -x "$TREE/scripts/get_maintainer.pl" ] || die "no $TREE/scripts/get_maintainer.pl: run 'make tree'"
body=$(mktemp)
trap 'rm -f "$body"' EXIT
stale=0
for name in $(series_names); do
	if [ "${1:-}" = --check ]; then
		if ! diff -u "$TOP/patches/$name/recipients" <(recipients "$name") >&2; then
			say "patches/$name/recipients is not what get_maintainer.pl says: run scripts/recipients.sh and make export"
			stale=1
		fi
	else
		recipients "$name" >"$TOP/patches/$name/recipients.new"
		mv "$TOP/patches/$name/recipients.new" "$TOP/patches/$name/recipients"
		say "patches/$name/recipients: $(grep -c '^To: ' "$TOP/patches/$name/recipients") To, $(grep -c '^Cc: ' "$TOP/patches/$name/recipients") Cc"
	fi
done
exit $stale
