#!/bin/bash
# Runs inside L1: all of 'perf test' but tests/l1/perf-skips, from the perf
# source directory so that perf finds its shell tests.  Appends one
# "PASS|FAIL|SKIP perf/<number> <description>" line per test (and subtest)
# to $L1_RESULTS/results.txt.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
RESULTS=${L1_RESULTS:-/tmp}
cd "$TREE/tools/perf" || exit 1

list=$(mktemp)
"$PERF" test list >"$list" 2>&1
skips=
while IFS=$'\t' read -r desc _; do
	case "$desc" in ''|'#'*) continue ;; esac
	n=$(awk -v d="$desc" 'index($0, ": " d) && substr($0, index($0, ": ") + 2) == d { sub(/:.*/, ""); print $1; exit }' "$list")
	[ -n "$n" ] && skips=${skips:+$skips,}$n
done < <(sed 's/\t\+/\t/' "$TOP/tests/l1/perf-skips")
rm -f "$list"
echo "perf test: skipping $skips (see tests/l1/perf-skips)"

"$PERF" test --skip "$skips" 2>&1 | tee "$RESULTS/perf-test.log" |
	sed -n 's/^ *\([0-9.]*\): \(.*[^ ]\) *: \(Ok\|Skip.*\|FAILED!\)$/\3\t\1\t\2/p' |
	while IFS=$'\t' read -r verdict number desc; do
		case "$verdict" in
		Ok) verdict=PASS ;;
		Skip*) verdict=SKIP ;;
		*) verdict=FAIL ;;
		esac
		echo "$verdict perf/$number $desc" >>"$RESULTS/results.txt"
	done
! grep -q '^FAIL perf/' "$RESULTS/results.txt"
