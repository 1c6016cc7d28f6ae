#!/bin/bash
# make check's accounting (scripts/results.py), on made-up outputs and on
# the real tests/expected: a run that records every listed result passes;
# a broken sub-test, a removed test, a new skip, a listed skip that now
# passes, a result the list does not name and an empty run each fail, with
# a line that says which.  Also the two parsers: a kselftest's KTAP output
# and perf test's.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
results() { python3 "$TOP/scripts/results.py" "$@"; }

# KTAP: a pass, a skip, a failure, a sub-test -t left out (not a result).
cat >"$tmp/ktap" <<'OUT'
TAP version 13
1..4
ok 1 c_path: 120 samples, 118 in guest
ok 2 # SKIP c_path_nmi: no NMI source
not ok 3 race: 0 samples
ok 4 # SKIP opt_in: left out by -t
OUT
want='PASS kvm/t/c_path
SKIP kvm/t/c_path_nmi # no NMI source
FAIL kvm/t/race'
have=$(results ktap kvm/t <"$tmp/ktap")
[ "$have" = "$want" ] && ok "KTAP output read" || bad "KTAP output read as: $have"

# perf test: a test, a parent with sub-tests, skips, a failure; a test
# skipped on request, which perf test says in each of its two passes.
cat >"$tmp/perftest" <<'OUT'
  1: vmlinux symtab matches kallsyms                                 : Ok
  5: Parse event definition strings                                  :
  5.1: Test event parsing                                            : Ok
  5.2: Parsing of all PMU events from sysfs                          : Skip (no PMU)
  7: Zstd perf.data compression/decompression                       : Skip (user override)
  9: Guest call chain: guest and host contexts                       : FAILED!
  7: Zstd perf.data compression/decompression                       : Skip (user override)
OUT
want='PASS perf/vmlinux symtab matches kallsyms
PASS perf/Parse event definition strings :: Test event parsing
SKIP perf/Parse event definition strings :: Parsing of all PMU events from sysfs # no PMU
SKIP perf/Zstd perf.data compression/decompression # user override
FAIL perf/Guest call chain: guest and host contexts'
have=$(results perftest perf <"$tmp/perftest")
[ "$have" = "$want" ] && ok "perf test output read" || bad "perf test output read as: $have"

# A whole run as tests/expected wants it: every listed result, each as
# listed (a pass, or a skip it allows).
expected=$TOP/tests/expected
awk -F'\t' '!/^#/ && NF { pass = $2 == "" || $2 ~ /^alone:/
	print (pass ? "PASS " : "SKIP ") $1 (pass ? "" : " # listed") }' "$expected" >"$tmp/good"
[ -s "$tmp/good" ] || bad "tests/expected lists nothing"
judge() { results check "$1" "$expected" >"$tmp/out" 2>&1; }
if judge "$tmp/good" && grep -qE '^[0-9]+ passed, 0 failed, [0-9]+ skipped$' "$tmp/out"; then
	ok "a run as tests/expected lists passes: $(tail -n 1 "$tmp/out")"
else
	bad "a run as tests/expected lists: $(cat "$tmp/out")"
fi

# expect_failure WHAT PATTERN: the run in $tmp/run fails, saying PATTERN.
expect_failure() {
	if ! judge "$tmp/run" && grep -qF -- "$2" "$tmp/out"; then
		ok "$1 fails the run: $(grep -F -- "$2" "$tmp/out" | head -n 1)"
	else
		bad "$1 does not fail the run as it should: $(cat "$tmp/out")"
	fi
}
pick() { grep -m 1 -E "$1" "$tmp/good" | cut -d' ' -f2- | sed 's/ # listed$//'; }

t=$(pick '^PASS kvm/guest_callchain_test/')
[ -n "$t" ] || bad "tests/expected names no sub-test of guest_callchain_test"
sed "s|^PASS $t\$|FAIL $t|" "$tmp/good" >"$tmp/run"
expect_failure "a broken sub-test ($t)" "failed: $t"

t=$(pick '^PASS l1/perf/')
[ -n "$t" ] || bad "tests/expected names no perf test"
grep -vxF "PASS $t" "$tmp/good" >"$tmp/run"
expect_failure "a removed perf test ($t)" "missing: $t"

t=$(pick '^PASS kvm/guest_callchain_test/')
sed "s|^PASS $t\$|SKIP $t # no NMI source|" "$tmp/good" >"$tmp/run"
expect_failure "a new skip ($t)" "skipped, and $expected does not allow it: $t (no NMI source)"

t=$(pick '^SKIP ')
if [ -n "$t" ]; then
	sed "s|^SKIP $t # listed\$|PASS $t|" "$tmp/good" >"$tmp/run"
	expect_failure "a listed skip that passes ($t)" "a stale entry: drop it): $t"
fi

# A test run alone must pass like any other; perf-test.sh asks for the
# list of them.
t=$(grep -m 1 -P '^perf/[^\t]*\talone: ' "$expected" | cut -f1)
if [ -n "$t" ]; then
	sed "s|^PASS $t\$|SKIP $t # less than two compressed records|" "$tmp/good" >"$tmp/run"
	expect_failure "a test run alone that skips ($t)" "skipped, and $expected does not allow it: $t"
	results alone "$expected" perf | grep -qxF "${t#perf/}" &&
		ok "results.py alone lists ${t#perf/}" || bad "results.py alone does not list ${t#perf/}"
fi

{ cat "$tmp/good"; echo "PASS perf/a test nobody listed"; } >"$tmp/run"
expect_failure "a result the list does not name" "does not name it (add it): perf/a test nobody listed"

: >"$tmp/run"
expect_failure "a run with no results" "no results at all"

{ cat "$tmp/good"; grep -m 1 '^PASS' "$tmp/good"; } >"$tmp/run"
expect_failure "a result recorded twice" "recorded twice"

# perf test itself: a test the list wants passing, skipped on request,
# is a skip the list does not allow.
if [ -x "$PERF" ]; then
	list=$(cd "$TREE/tools/perf" && "$PERF" test list 2>&1)
	number='' desc=''
	while read -r n d; do
		grep -qxF "PASS perf/$d" "$tmp/good" && number=${n%:} desc=$d && break
	done < <(grep -E '^ *[0-9]+: ' <<<"$list")
	[ -n "$number" ] || bad "tests/expected wants no test of perf test list to pass on this host"
	(cd "$TREE/tools/perf" && "$PERF" test --skip "$number" "$number" 2>&1) |
		results perftest perf >"$tmp/skipped"
	if grep -qxF "SKIP perf/$desc # user override" "$tmp/skipped"; then
		{ grep -vxF "PASS perf/$desc" "$tmp/good"; cat "$tmp/skipped"; } >"$tmp/run"
		expect_failure "perf test $number skipped (--skip $number)" \
			"skipped, and $expected does not allow it: perf/$desc"
	else
		bad "perf test --skip $number $number gave: $(cat "$tmp/skipped")"
	fi
else
	bad "no perf at $PERF: make check builds it before the harness tests"
fi
exit $fail
