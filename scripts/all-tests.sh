#!/bin/bash
# Every test, run by 'make check' (and so by CI), from nothing, ending in a
# stage-time table and "N passed, N failed, N skipped", and a non-zero exit
# on any failure.  Results in $OUT/check: results.txt (a line per test and
# sub-test: PASS|FAIL|SKIP NAME), a log per stage, stages.txt (their times).
#
# The run is judged against tests/expected (scripts/results.py check): every
# result listed there must be recorded, and pass unless the list says why it
# may skip; any other skip, a missing result, a listed skip that now passes
# or a result the list does not name fails the run.
#
# Stages: deps -> L1's QEMU -> the guests' QEMU -> tree -> build (x86 kernel, perf, selftests) -> perf test
# on this host (the machine to itself) -> perf's ORC test on Debian's
# stock kernel image and on the base's; then two lanes side by side:
#
#   emulators (one at a time, each keeps a CPU busy): the harness tests
#   that boot L1 -> the L1 suite (make check-host inside L1: KVM
#   selftests, the perf tests that need the series' kernel, a guest
#   recorded) -> the VMs' opt-in in an L1 under
#   lockdown=integrity -> a smoke run of the benchmark -> the short demo
#   (the L1 suite's guest recording, drawn and checked) and its bad uses
#   -> what the previous perf makes of it (two VMs at once: make
#   check-vms);
#
#   the rest, at a lower priority (nice 10) so that the emulators' time
#   limits hold: guest_callchain_test on Intel VMX under Bochs (one
#   thread, from a checkout under /tmp) -> checkpatch (the kernel's,
#   QEMU's on patches/qemu) + export round trips -> the series apply as
#   their cover letters say, To/Cc up to date -> perf without libelf and
#   with libunwind -> arm64 build of the touched directories -> every patch
#   builds on its own (those built before with the same inputs, as
#   tests/verified-builds records, are not built again) -> perf's other
#   builds' guest tests -> the packages of make packages, small (when their
#   inputs changed) -> the other harness tests.
#
# Stage lines and results of the two lanes interleave; results.txt and
# stages.txt have them all.
#
# CHECK_SECONDS (5100: CI gives .ci/run 90 minutes) is the time the whole
# run may take: each stage gets what is left (less a minute for the
# summary), and one that would run past it is stopped and fails by name,
# as do those left with no time.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

RESULTS=$OUT/check
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
: >"$RESULTS/results.txt"
export STAGE_TIMES=$RESULTS/stages.txt
: >"$STAGE_TIMES"
export L1_RETRIES=$RESULTS/retries.txt
: >"$L1_RETRIES"
export STAGE_NOTES=$RESULTS/notes.txt
: >"$STAGE_NOTES"
t0=$(date +%s)
deadline=$((t0 + ${CHECK_SECONDS:-5100}))
SUMMARY_SECONDS=60

record() { echo "$1 $2" >>"$RESULTS/results.txt"; echo "$1 $2"; }

stage_table() {
	echo "=== stage times"
	awk -F'\t' 'FILENAME == ARGV[1] { note[$1] = note[$1] "\n      " $2; next }
		{ printf "  %-28s %6ds  %s%s\n", $1, $2, $3, note[$1] }' "$STAGE_NOTES" "$STAGE_TIMES"
	printf '  %-28s %6ds\n' total $(($(date +%s) - t0))
}

# The verdict of the whole run: every result against tests/expected.
summary() {
	stage_table
	# Each L1 booted a second time (scripts/l1-run.sh): a result of its own.
	cat "$L1_RETRIES" >>"$RESULTS/results.txt"
	# One checkpatch result per patch of the series, besides the list.
	{
		series_patches
		ls "$TOP"/patches/qemu/0*.patch | grep -v '/0000-' | sed 's|.*/|qemu/|'
	} | sed 's|^|checkpatch/|' >"$RESULTS/expected-checkpatch"
	python3 "$TOP/scripts/results.py" check --caps "$HOST_CAPS" --without "$CHECK_HOST_SCOPE" \
		--nested l1/check-host/ "$RESULTS/results.txt" "$TOP/tests/expected" "$RESULTS/expected-checkpatch"
}

# A stage everything after it depends on: on failure, count it and stop.
must() {
	timed "$@" && return 0
	record FAIL "stage/$1"
	stage_table
	echo "stage $1 failed: the stages after it did not run"
	grep '^FAIL' "$RESULTS/results.txt" | sed 's/^/failed: /'
	python3 "$TOP/scripts/results.py" count "$RESULTS/results.txt"
	exit 1
}

# Every process below PID $1, and $1 itself, killed (whatever session or
# process group they made for themselves: script(1) and Bochs do).
kill_tree() {
	local pids=("$1") i=0 child
	while [ $i -lt ${#pids[@]} ]; do
		for child in $(ps -o pid= --ppid "${pids[$i]}" 2>/dev/null); do
			pids+=("$child")
		done
		i=$((i + 1))
	done
	kill -KILL "${pids[@]}" 2>/dev/null || true
}

# stage() with the deadline: the stage gets the time left, less the
# summary's; past it, it is stopped, says so and fails (status 124).
current=
lanes=()
trap 'for p in $current "${lanes[@]}"; do kill_tree "$p"; done; exit 130' INT TERM
timed() {
	local name=$1 left rc=0 watchdog
	left=$((deadline - $(date +%s) - SUMMARY_SECONDS))
	if [ $left -le 0 ]; then
		echo "=== stage $name: not run: no time left of CHECK_SECONDS=${CHECK_SECONDS:-5100}"
		printf '%s\t0\tno time left\n' "$name" >>"$STAGE_TIMES"
		return 124
	fi
	stage "$@" &
	current=$!
	(
		sleep "$left"
		echo "=== stage $name: out of time after ${left}s (CHECK_SECONDS=${CHECK_SECONDS:-5100}): stopped"
		printf '%s\t%d\tout of time\n' "$name" "$left" >>"$STAGE_TIMES"
		kill_tree "$current"
	) &
	watchdog=$!
	wait "$current" || rc=$?
	kill_tree "$watchdog"
	wait "$watchdog" 2>/dev/null
	current=
	return $rc
}

# A stage that is itself a test: count it, go on either way.  It may add
# results of its own (sub-tests) to $STAGE_RESULTS.
tested() {
	local name=$1 log=$RESULTS/${1//\//-}.log
	shift
	export STAGE_RESULTS=$RESULTS/${name//\//-}.results
	: >"$STAGE_RESULTS"
	if timed "$name" "$@" >"$log" 2>&1; then
		grep '^=== stage' "$log"
		record PASS "$name"
	else
		tail -n 40 "$log" | sed 's/^/    | /'
		record FAIL "$name"
	fi
	cat "$STAGE_RESULTS" >>"$RESULTS/results.txt"
	grep -v '^PASS' "$STAGE_RESULTS" | sed 's/^/    /'
	unset STAGE_RESULTS
}

# The tests of the harness itself: with "l1" those that boot L1
# (tests/harness/l1-*-test.sh), with "host" the others.  Exit status 4
# (KSFT_SKIP) when one cannot run here, which tests/expected must allow.
harness() {
	local t name rc
	for t in "$TOP"/tests/harness/*-test.sh; do
		case $1,$(basename "$t") in
		l1,l1-*) ;;
		host,l1-*|l1,*) continue ;;
		esac
		name=$(basename "$t" .sh)
		rc=0
		bash "$t" >"$RESULTS/$name.log" 2>&1 || rc=$?
		case $rc in
		0) record PASS "harness/$name" ;;
		4) record SKIP "harness/$name # $(tail -n 1 "$RESULTS/$name.log")" ;;
		*)
			record FAIL "harness/$name"
			tail -n 60 "$RESULTS/$name.log" | sed 's/^/    | /'
			;;
		esac
	done
}

host_caps() {
	python3 "$TOP/scripts/host-caps.py" --kvm-uapi "$TREE/include/uapi/linux/kvm.h" \
		--perf "perf=$PERF" >"$HOST_CAPS.new" || return 1
	harness_conditions >>"$HOST_CAPS.new"
	mv "$HOST_CAPS.new" "$HOST_CAPS" &&
		awk -F'\t' '!/^perf:/ { printf "  %-24s %-4s %s\n", $1, $2, $3 }' "$HOST_CAPS"
}

# guest_callchain_test under Bochs, run from a copy of this checkout under
# /tmp (its build/ linked), where a user's clone may be: the selftests then
# sit under /tmp in the machine's initramfs too.
intel_vmx() {
	local copy rc=0
	copy=$(mktemp -d /tmp/check-checkout.XXXXXX)
	(cd "$TOP" && git ls-files -z --cached --others --exclude-standard | grep -zv '^build/') |
		(cd "$TOP" && xargs -0 cp --parents -t "$copy")
	ln -s "$BUILD" "$copy/build"
	say "running tests/bochs/vmx-test.sh from $copy"
	bash "$copy/tests/bochs/vmx-test.sh" || rc=$?
	rm -rf "$copy"
	return $rc
}

# The short demo: the real Linux guest the L1 suite recorded (check-host's
# guest/record: demo/in-l1.sh, 8 s of the stock guest at level 2), its
# flame graph drawn and checked on this host as make demo draws its own;
# then the demo used wrongly.  One recording, one attempt: one that needs
# a second is a defect to find, not to hide.  make check-vms runs make
# demo's whole path, its own L1 included, with two VMs (left out here: about
# 17 minutes on the bench's nested guests).
demo_short() {
	local suite=$OUT/l1/suite
	rm -rf "$OUT/demo-short"
	bash "$TOP/demo/collect.sh" "$suite/check-host/guest" "$suite/console.log" "$OUT/demo-short" &&
		stage demo/report bash "$TOP/demo/report.sh" "$OUT/demo-short" &&
		bash "$TOP/demo/check-output.sh" "$OUT/demo-short"
}
# The stages that run an emulator (QEMU's L1, Bochs), one after another.
emulator_lane() {
	timed harness/l1 harness l1
	# make check-host inside L1, judged there (l1/check-host).
	tested l1/check-host bash "$TOP/tests/l1/suite.sh"
	# The VMs' opt-in in a kernel booted with lockdown=integrity (Debian's
	# with Secure Boot), through the administrator's kvm_guest_callchains too.
	tested l1/lockdown env L1_APPEND=lockdown=integrity \
		bash "$TOP/scripts/l1-run.sh" -t 600 -n lockdown bash "$TOP/tests/l1/lockdown-test.sh"
	tested bench/smoke bash "$TOP/bench/run.sh" --smoke
	tested demo/short demo_short
	tested demo/bad-use bash "$TOP/tests/demo/bad-use-test.sh" "$OUT/demo-short"
	# The same recording with the host's reads of the guest alone.
	tested demo/agentless bash "$TOP/tests/demo/agentless-test.sh" "$OUT/demo-short"
	# What the previous perf makes of the whole vCPU thread's recording.
	tested demo/released-perf bash "$TOP/tests/demo/released-perf-test.sh" "$OUT/demo-short"
}

# The others, beside them.
host_lane() {
	# KVM's Intel code: guest_callchain_test under Bochs' emulated VMX.
	# An emulator too, but one thread, as L1's TCG is: here it has the
	# other CPU to itself before the builds.
	tested intel/vmx intel_vmx
	# The previous perf, for demo/released-perf in the other lane.
	tested build/perf-released bash "$TOP/scripts/build-perf.sh" released
	tested series/checkpatch bash "$TOP/tests/series/checkpatch-test.sh"
	tested series/qemu bash "$TOP/tests/series/qemu-series-test.sh"
	# QEMU's functional test of patches/qemu under this host's KVM, where
	# it has one: a kernel without the series refuses every level.
	tested qemu-host bash "$TOP/tests/l1/qemu-test.sh" --functional-only qemu-host
	tested harness/export-roundtrip bash "$TOP/tests/series/export-roundtrip-test.sh"
	# The postable series: each applies on the base with what it needs and
	# after the others, and its To/Cc are what get_maintainer.pl says.
	tested series/apply bash "$TOP/scripts/series-check.sh"
	tested series/recipients bash "$TOP/scripts/recipients.sh" --check
	for v in $PERF_VARIANTS; do
		tested "build/perf-$v" bash "$TOP/scripts/build-perf.sh" "$v"
	done
	tested build/arm64 bash "$TOP/scripts/build-arm64.sh"
	tested build/bisect bash "$TOP/scripts/verified-builds.sh" bisect
	for v in $PERF_VARIANTS; do
		tested "perf/$v" bash "$TOP/tests/perf/variant-test.sh" "$v"
	done
	tested packages/small bash "$TOP/scripts/verified-builds.sh" packages-small
	timed harness harness host
}

# The tracked files as the run found them: a run changes none.
tracked_before=$(git -C "$TOP" status --porcelain --untracked-files=no 2>/dev/null; git -C "$TOP" diff 2>/dev/null | sha1sum)
must deps env DEPS_NO_QEMU=1 bash "$TOP/scripts/deps.sh"
must build-qemu bash "$TOP/scripts/qemu.sh"
must build-guest-qemu bash "$TOP/scripts/guest-qemu.sh"
# Only the demo needs these: without them its stages fail, the rest runs.
timed demo-deps bash "$TOP/demo/deps.sh" || record FAIL stage/demo-deps
must tree bash "$TOP/scripts/tree.sh"
must build-kernel bash "$TOP/scripts/build-kernel.sh"
must build-perf bash "$TOP/scripts/build-perf.sh"
must build-selftests bash "$TOP/scripts/build-selftests.sh"
# What this host and our perf can do, once: the conditions under which
# tests/expected lets a test skip (or leaves it out), shown here.
must host-caps host_caps
# perf's own tests on this host, but those that need the series' kernel,
# which run in L1; with the machine to itself (some measure what a second
# of sampling writes).
tested perf/host bash "$TOP/tests/perf-test.sh" perf
tested perf/orc-stock-kernel bash "$TOP/tests/perf/orc-kernel-test.sh" stock-kernel
tested perf/orc-base-kernel bash "$TOP/tests/perf/orc-kernel-test.sh" base-kernel
# perf kvm kallsyms and perf kvm tasks against Debian's stock kernel
# booted under QEMU here.
tested perf/guest-live bash "$TOP/tests/perf/guest-live-test.sh"

bash "$TOP/scripts/verified-builds.sh" merge
emulator_lane &
lanes+=($!)
(renice -n 10 -p "$BASHPID" >/dev/null; host_lane) &
lanes+=($!)
wait "${lanes[@]}"
lanes=()
tracked_after=$(git -C "$TOP" status --porcelain --untracked-files=no 2>/dev/null; git -C "$TOP" diff 2>/dev/null | sha1sum)
if [ "$tracked_after" = "$tracked_before" ]; then
	record PASS harness/tracked-files
else
	record FAIL harness/tracked-files
	echo "    the run changed tracked files: $(git -C "$TOP" status --porcelain --untracked-files=no | tr '\n' ' ')"
fi
summary
