#!/bin/bash
# make check's accounting (scripts/results.py), on made-up outputs and on
# the real tests/expected: a run that records every listed result passes;
# a broken sub-test, a removed test, a new skip, a listed skip that now
# passes, a result the list does not name and an empty run each fail, with
# a line that says which.  Also the two parsers: a kselftest's KTAP output
# and perf test's.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"
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

# count: the verdicts of a run, all or under a prefix, not judged.
printf 'PASS kvm/a\nFAIL kvm/b\nSKIP perf/c # why\nRETRY l1/suite # stuck\n' >"$tmp/count"
[ "$(results count "$tmp/count")" = "1 passed, 1 failed, 1 skipped, 1 retried" ] &&
	[ "$(results count "$tmp/count" kvm)" = "1 passed, 1 failed, 0 skipped, 0 retried" ] &&
	ok "results.py count" || bad "results.py count: $(results count "$tmp/count"); kvm: $(results count "$tmp/count" kvm)"

# Two made-up hosts, judged on the real tests/expected: "bare", where every
# condition the list names holds (no PMU, no breakpoints, ...), and
# "full", where none does (a PMU, breakpoints, perf built with
# everything).  run_as HOST writes the run such a host gives: each listed
# result passing, or skipping where its condition holds there (a test
# left out by a condition reports itself once, not its sub-tests).
expected=$TOP/tests/expected
conditions=$(grep -oP '\t(skip|not run) if \K.+?(?=: )' "$expected" | sed 's/ or /\n/g' | sort -u)
[ -n "$conditions" ] || bad "tests/expected names no condition"
while read -r c; do printf '%s\tyes\tmade up: lacks it\n' "$c"; done <<<"$conditions" >"$tmp/caps-bare"
while read -r c; do printf '%s\tno\tmade up: has it\n' "$c"; done <<<"$conditions" >"$tmp/caps-full"
cat >"$tmp/run_as.py" <<'PY'
import re, sys
expected, caps = sys.argv[1], sys.argv[2]
yes = {l.split("\t")[0] for l in open(caps) if l.split("\t")[1] == "yes"}
entries = []
for line in open(expected):
    if line.startswith("#") or not line.strip():
        continue
    name, _, note = line.rstrip("\n").partition("\t")
    m = re.match(r"(skip|not run)(?: if (.+?))?: ", note)
    held = bool(m) and (not m.group(2) or any(c in yes for c in m.group(2).split(" or ")))
    entries.append((name, m.group(1) if m else "", held))
left_out = {n for n, kind, held in entries if kind == "not run" and held}
parents = {n.split(" :: ")[0] for n, _, _ in entries if " :: " in n}
for name, kind, held in entries:
    if name.split(" :: ")[0] in left_out and " :: " in name:
        continue
    if name in parents and name not in left_out:
        continue
    if held:
        print(f"SKIP {name} # {'user override' if kind == 'not run' else 'listed'}")
    else:
        print(f"PASS {name}")
PY
run_as() { python3 "$tmp/run_as.py" "$expected" "$tmp/caps-$1"; }
run_as bare >"$tmp/good"
run_as full >"$tmp/good-full"
[ -s "$tmp/good" ] || bad "tests/expected lists nothing"
caps=$tmp/caps-bare
judge() { results check --caps "$caps" "$1" "$expected" >"$tmp/out" 2>&1; }
for host in bare full; do
	caps=$tmp/caps-$host
	if judge "$tmp/$( [ $host = bare ] && echo good || echo good-full)" &&
		grep -qE '^[0-9]+ passed, 0 failed, [0-9]+ skipped, 0 retried$' "$tmp/out"; then
		ok "a made-up $host host's run as tests/expected lists passes: $(tail -n 1 "$tmp/out")"
	else
		bad "a made-up $host host's run as tests/expected lists: $(cat "$tmp/out")"
	fi
done
caps=$tmp/caps-bare
# The two parts of the list: make check-host's (CHECK_HOST_SCOPE), judged
# with --only where it runs, and make check's, judged with --without and
# the results of check-host inside L1 under --nested: counted, not judged
# again.
scope_re="^[A-Z]+ (${CHECK_HOST_SCOPE//,/|})"
grep -E "$scope_re" "$tmp/good" >"$tmp/host-run"
grep -vE "$scope_re" "$tmp/good" >"$tmp/check-run"
sed 's|^\([A-Z]*\) |\1 l1/check-host/|' "$tmp/host-run" >>"$tmp/check-run"
if [ -s "$tmp/host-run" ] &&
	results check --caps "$caps" --only "$CHECK_HOST_SCOPE" "$tmp/host-run" "$expected" >"$tmp/out" 2>&1; then
	ok "make check-host's part judged alone (--only): $(tail -n 1 "$tmp/out")"
else
	bad "make check-host's part judged alone: $(cat "$tmp/out")"
fi
n=$(wc -l <"$tmp/good")
if results check --caps "$caps" --without "$CHECK_HOST_SCOPE" --nested l1/check-host/ \
	"$tmp/check-run" "$expected" >"$tmp/out" 2>&1 &&
	[ "$(tail -n 1 "$tmp/out" | awk '{ print $1 + $5 }')" = "$n" ]; then
	ok "make check's part with check-host's results nested: all $n counted: $(tail -n 1 "$tmp/out")"
else
	bad "make check's part with check-host's results nested ($n results): $(cat "$tmp/out")"
fi
t=$(grep -m 1 '^PASS l1/check-host/kvm/' "$tmp/check-run" | cut -d' ' -f2-)
sed "s|^PASS $t\$|FAIL $t|" "$tmp/check-run" >"$tmp/run"
results check --caps "$caps" --without "$CHECK_HOST_SCOPE" --nested l1/check-host/ "$tmp/run" "$expected" >"$tmp/out" 2>&1 &&
	bad "a nested failure ($t) passes make check: $(tail -n 1 "$tmp/out")" ||
	ok "a nested failure is counted and fails the run: $(tail -n 1 "$tmp/out")"
t=$(grep -m 1 '^PASS kvm/' "$tmp/host-run" | cut -d' ' -f2-)
grep -vxF "PASS $t" "$tmp/host-run" >"$tmp/run"
! results check --caps "$caps" --only "$CHECK_HOST_SCOPE" "$tmp/run" "$expected" >"$tmp/out" 2>&1 &&
	grep -qF "missing: $t" "$tmp/out" && ok "make check-host missing a selftest ($t) fails, saying so" ||
	bad "make check-host missing a selftest ($t): $(cat "$tmp/out")"
grep -v ' l1/check-host/' "$tmp/check-run" >"$tmp/run"
results check --caps "$caps" --without "$CHECK_HOST_SCOPE" --nested l1/check-host/ "$tmp/run" "$expected" >"$tmp/out" 2>&1 &&
	! grep -q '^missing' "$tmp/out" &&
	ok "make check does not ask for check-host's results itself (its verdict is l1/check-host)" ||
	bad "make check without check-host's nested results: $(head -n 3 "$tmp/out")"
# The full host passes what the bare one skips: fewer skips.
[ "$(grep -c '^SKIP' "$tmp/good-full")" -lt "$(grep -c '^SKIP' "$tmp/good")" ] ||
	bad "the made-up host with everything skips as much as the bare one"
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

t=$(pick '^PASS kernel/perf/')
[ -n "$t" ] || bad "tests/expected names no perf test"
grep -vxF "PASS $t" "$tmp/good" >"$tmp/run"
expect_failure "a removed perf test ($t)" "missing: $t"

t=$(pick '^PASS kvm/guest_callchain_test/')
sed "s|^PASS $t\$|SKIP $t # no NMI source|" "$tmp/good" >"$tmp/run"
expect_failure "a new skip ($t)" "skipped, and $expected does not allow it: $t (no NMI source)"

# A skip under a condition: where it holds the test must skip, where it
# does not it must pass.
t=$(grep -m 1 -P '^perf/[^\t]*\tskip if no-pmu: ' "$expected" | cut -f1)
[ -n "$t" ] || bad "tests/expected has no skip if no-pmu"
sed "s|^SKIP $t # listed\$|PASS $t|" "$tmp/good" >"$tmp/run"
expect_failure "on the bare host, a test that skips without a PMU passing ($t)" \
	"passed, but its condition (no-pmu) holds here, where it should skip"
caps=$tmp/caps-full
sed "s|^PASS $t\$|SKIP $t # no PMU|" "$tmp/good-full" >"$tmp/run"
expect_failure "on the full host, the same test skipping" \
	"skipped, and its condition (no-pmu) does not hold here: $t (no PMU)"
# Tests left out where breakpoints do not fire: run (and passing) on the
# full host, each sub-test; on the bare one reported once, left out.
grep -qxF 'PASS perf/Watchpoint :: Write Only Watchpoint' "$tmp/good-full" &&
	grep -qxF 'SKIP perf/Watchpoint # user override' "$tmp/good" &&
	! grep -q '^[A-Z]* perf/Watchpoint :: ' "$tmp/good" &&
	ok "the watchpoint tests: run on the full host, left out on the bare one" ||
	bad "the watchpoint tests are not listed as left out where breakpoints do not fire"
grep -vF 'perf/Watchpoint :: Write Only' "$tmp/good-full" >"$tmp/run"
expect_failure "on the full host, a watchpoint sub-test missing" "missing: perf/Watchpoint :: Write Only Watchpoint"
for host in bare full; do
	results notrun --caps "$tmp/caps-$host" "$expected" perf >"$tmp/notrun-$host"
done
grep -qxF Watchpoint "$tmp/notrun-bare" && ! grep -qxF Watchpoint "$tmp/notrun-full" &&
	ok "results.py notrun leaves Watchpoint out on the bare host only" ||
	bad "results.py notrun: bare: $(paste -sd, "$tmp/notrun-bare"); full: $(paste -sd, "$tmp/notrun-full")"
# make expected (accept) on either host's run keeps every entry, the
# conditions and reasons with them (a test left out under a condition
# that did not hold ran as its sub-tests, Watchpoint on the full host).
for host in bare full; do
	cp "$expected" "$tmp/accepted"
	run=$tmp/good$([ $host = full ] && echo -full)
	results accept "$run" "$tmp/accepted"
	if diff <(grep -v '^#' "$expected" | sort) <(grep -v '^#' "$tmp/accepted" | sort) >"$tmp/diff"; then
		ok "make expected on the $host host's run keeps every entry as it is"
	else
		bad "make expected on the $host host's run changed entries: $(head -n 5 "$tmp/diff")"
	fi
done
# A condition nobody probed is no answer.
grep -v '^no-pmu	' "$tmp/caps-full" >"$tmp/caps-unprobed"
caps=$tmp/caps-unprobed
cp "$tmp/good-full" "$tmp/run"
expect_failure "a condition the probe did not answer" "its condition (no-pmu) was not probed"
caps=$tmp/caps-bare
# A skip with no condition is not a line of the list.
{ grep '^#' "$expected"; printf 'perf/x\tskip: some reason\n'; } >"$tmp/uncond"
if results check --caps "$caps" "$tmp/good" "$tmp/uncond" >"$tmp/out" 2>&1; then
	bad "a skip without a condition is accepted"
else
	grep -q 'skip if CONDITION' "$tmp/out" && ok "a skip without a condition is refused: $(head -n 1 "$tmp/out")" ||
		bad "a skip without a condition: $(cat "$tmp/out")"
fi
# Retries: one a run is counted and shown, a second fails the run.
{ cat "$tmp/good"; echo "RETRY l1/suite # stuck in a guest with L1's timer pending"; } >"$tmp/run"
judge "$tmp/run" && grep -q ', 1 retried$' "$tmp/out" && grep -q '^retried: l1/suite (stuck' "$tmp/out" &&
	ok "one retry: counted and shown, the run passes" || bad "one retry: $(cat "$tmp/out")"
{ cat "$tmp/run"; echo "RETRY demo/vms # stuck in a guest with L1's timer pending"; } >"$tmp/run2"
mv "$tmp/run2" "$tmp/run"
expect_failure "two retries in one run" "2 retries in one run: more than 1"

# A test run alone must pass like any other; perf-test.sh asks for the
# list of them.
t=$(grep -m 1 -P '^perf/[^\t]*\talone: ' "$expected" | cut -f1)
if [ -n "$t" ]; then
	sed "s|^PASS $t\$|SKIP $t # less than two compressed records|" "$tmp/good" >"$tmp/run"
	expect_failure "a test run alone that skips ($t)" "skipped, and $expected does not allow it: $t"
	grep -qxF "${t#perf/}" < <(results alone "$expected" perf) &&
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
# tests/perf-test.sh runs a failed test once more with -v, for why: its
# end shown, its output in the log, the result still the failure.
cat >"$tmp/perf" <<'PERF'
#!/bin/sh
[ "$1" = test ] && shift
case "$1" in
list) printf '  1: Made-up failing test\n  2: Made-up passing test\n' ;;
-v) echo "made-up test $2: why it failed"; exit 1 ;;
*) printf '  1: Made-up failing test : FAILED!\n  2: Made-up passing test : Ok\n' ;;
esac
PERF
chmod +x "$tmp/perf"
PERF=$tmp/perf STAGE_RESULTS=$tmp/perf.results bash "$TOP/tests/perf-test.sh" made-up \
	"Made-up failing test" "Made-up passing test" >"$tmp/out" 2>&1
rc=$?
if [ $rc -eq 1 ] && grep -qx "    | made-up test 1: why it failed" "$tmp/out" &&
	grep -qx "made-up test 1: why it failed" "$tmp/perf-made-up.log" &&
	! grep -q "made-up test 2" "$tmp/out" &&
	[ "$(cat "$tmp/perf.results")" = "FAIL made-up/Made-up failing test
PASS made-up/Made-up passing test" ]; then
	ok "perf-test.sh: a failed test once more with -v, shown and logged, still a failure"
else
	bad "perf-test.sh with a failed test: status $rc, $(cat "$tmp/out")"
fi
exit $fail
