#!/bin/bash
# perf's own tests, from the perf source directory so that perf finds its
# shell tests; a "PASS|FAIL|SKIP PREFIX/DESCRIPTION" line per test and
# sub-test appended to $STAGE_RESULTS (scripts/results.py perftest), perf
# test's output beside it.
#
#   tests/perf-test.sh perf       every test but those tests/expected marks
#                                 "not run" (perf test --skip; they show as
#                                 skipped) and those it names under
#                                 kernel/perf/; then those it marks "alone",
#                                 one at a time (perf test runs the others
#                                 side by side): make check on its host,
#                                 make check-host CHECK_HOST_PERF=all
#   tests/perf-test.sh kernel/perf
#                                 the tests tests/expected names under
#                                 kernel/perf/, those that need the
#                                 series' kernel (make check-host)
#   tests/perf-test.sh PREFIX DESCRIPTION...
#                                 the tests of those descriptions, exactly
#                                 (perf's other builds: PERF=.../perf)
#
# PERF_TEST_ARGS adds options (--dso IMAGE).  Tests are picked by number,
# from their exact descriptions: perf test takes any other word as a
# substring of descriptions ("Guest call chain" is also the shell test
# "perf kvm guest call chains", found or not by where perf runs from).
#
# A failed test runs once more with -v, its output in the log and its
# last lines on stdout: a diagnostic, not a second chance.
#
# Exit status: perf test's (non-zero when its harness failed or perf
# crashed), else 1 when a test failed.  A test that does not report at all
# is missing from the results, which fails make check (tests/expected).
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"
prefix=${1:?usage: $0 perf|kernel/perf|PREFIX DESCRIPTION...}
shift
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"
log=${STAGE_RESULTS%.*}-${prefix//\//-}.log
expected=$TOP/tests/expected
# A packaged perf finds its shell tests where it is installed.
[ ! -d "$TREE/tools/perf" ] || cd "$TREE/tools/perf" || exit 1

# The numbers of the tests (top level) whose descriptions are given on stdin.
numbers() {
	local list=$1 desc n out=
	while IFS= read -r desc; do
		n=$(awk -v d="$desc" '{ line = $0; sub(/^ *[0-9]+: /, "", line) }
			line == d && $1 ~ /^[0-9]+:$/ { sub(/:/, "", $1); print $1; exit }' "$list")
		[ -n "$n" ] || { echo "perf test has no test '$desc' (named in $expected)" >&2; continue; }
		out=${out:+$out,}$n
	done
	echo "$out"
}

list=$(mktemp)
one=$(mktemp)
trap 'rm -f "$list" "$one"' EXIT
"$PERF" test list >"$list" 2>&1 || { cat "$list"; exit 1; }
# The top-level descriptions that need the series' kernel.
series=$(awk -F'\t' '$1 ~ /^kernel\/perf\// { sub(/^kernel\/perf\//, "", $1); sub(/ :: .*/, "", $1); print $1 }' "$expected" | sort -u)
if [ $# -gt 0 ]; then
	run=$(printf '%s\n' "$@" | numbers "$list")
	read -r -a args <<<"${run//,/ }"
	[ ${#args[@]} -eq $# ] || { echo "perf test has not each of: $*"; exit 1; }
else case $prefix in
kernel/perf)
	run=$(numbers "$list" <<<"$series")
	[ -n "$run" ] || { echo "no perf test that needs the series' kernel"; exit 1; }
	# perf test takes the tests to run as separate numbers.
	read -r -a args <<<"${run//,/ }"
	;;
perf)
	alone=$(python3 "$TOP/scripts/results.py" alone "$expected" perf)
	[ -s "$HOST_CAPS" ] || die "no $HOST_CAPS: make check probes it (scripts/host-caps.py)"
	notrun=$(python3 "$TOP/scripts/results.py" notrun --caps "$HOST_CAPS" "$expected" perf) ||
		die "results.py notrun: $notrun"
	skip=$( { echo "$notrun"; echo "$series"
		echo "$alone"; } | grep -v '^$' | sort -u | numbers "$list")
	args=(${skip:+--skip "$skip"})
	;;
*) die "usage: $0 perf|kernel/perf|PREFIX DESCRIPTION..." ;;
esac; fi
read -r -a extra <<<"${PERF_TEST_ARGS:-}"
echo "$PERF test ${extra[*]} ${args[*]}"

"$PERF" test "${extra[@]}" "${args[@]}" >"$log" 2>&1
rc=$?
results=$(python3 "$TOP/scripts/results.py" perftest "$prefix" <"$log")
elsewhere=$(printf '%s\n' "${series:-}" "${alone:-}" | grep -v '^$')
if [ "$prefix" = perf ] && [ -n "$elsewhere" ]; then
	# The tests of kernel/perf and those run alone show here as skipped
	# by request: not results.
	results=$(grep -vxF -f <(sed "s|^|SKIP perf/|; s|\$| # user override|" <<<"$elsewhere") <<<"$results")
fi
# Those whose outcome depends on having the machine to themselves.
if [ "$prefix" = perf ] && [ -n "${alone:-}" ]; then
	for n in $(numbers "$list" <<<"$alone" | tr , ' '); do
		echo "$PERF test ${extra[*]} $n (alone)"
		"$PERF" test "${extra[@]}" "$n" >"$one" 2>&1 || rc=$?
		cat "$one" >>"$log"
		results+=$'\n'$(python3 "$TOP/scripts/results.py" perftest "$prefix" <"$one")
	done
fi
[ -n "$results" ] || { cat "$log"; echo "perf test ${args[*]} reported no test"; exit 1; }
# Each failed test once more, verbose (bounded), for why: its output goes
# to the log and its end to stdout after the results, where the end of a
# failed stage's output (all make check shows of it) has it; the result
# stays the first run's.
echo "$results" >>"$STAGE_RESULTS"
echo "$results"
failed=$(sed -n "s|^FAIL $prefix/||p" <<<"$results" | sed 's/ :: .*//' | sort -u)
for n in $( [ -z "$failed" ] || numbers "$list" <<<"$failed" | tr , ' '); do
	echo "$PERF test ${extra[*]} -v $n (failed: once more, verbose, for the log)"
	timeout 600 "$PERF" test "${extra[@]}" -v "$n" >"$one" 2>&1
	echo "perf test -v $n: status $?; its last lines:"
	tail -n 40 "$one" | sed 's/^/    | /'
	{ echo "=== perf test -v $n, once more after it failed (not a result)"; cat "$one"; } >>"$log"
done
[ $rc -eq 0 ] || { echo "perf test exited with status $rc"; exit $rc; }
! grep -q '^FAIL' <<<"$results"
