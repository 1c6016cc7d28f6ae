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
# Stages: deps -> tree -> build (x86 kernel, perf, selftests) -> perf test
# on this host (the machine to itself) -> perf's ORC test on Debian's
# stock kernel image and on the base's; then two lanes side by side:
#
#   emulators (one at a time, each keeps a CPU busy): the harness tests
#   that boot L1 -> guest_callchain_test on Intel VMX under Bochs, from a
#   checkout under /tmp -> the L1 suite (make check-host inside L1: KVM
#   selftests, the perf tests that need the series' kernel, a guest
#   recorded) -> the VMs' opt-in in an L1 under
#   lockdown=integrity -> a smoke run of the benchmark -> the short demo
#   and its bad uses -> two VMs at once, one recording, told apart, and
#   given the wrong sidebands;
#
#   the rest, at a lower priority (nice 10) so that the emulators' time
#   limits hold: checkpatch + export round trip -> the series apply as
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
# CHECK_SECONDS (4800) is the time the whole run may take: each stage gets
# what is left (less a minute for the summary), and one that would run past
# it is stopped and fails by name, as do those left with no time.
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
deadline=$((t0 + ${CHECK_SECONDS:-4800}))
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
	series_patches | sed 's|^|checkpatch/|' >"$RESULTS/expected-checkpatch"
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
		echo "=== stage $name: not run: no time left of CHECK_SECONDS=${CHECK_SECONDS:-4800}"
		printf '%s\t0\tno time left\n' "$name" >>"$STAGE_TIMES"
		return 124
	fi
	stage "$@" &
	current=$!
	(
		sleep "$left"
		echo "=== stage $name: out of time after ${left}s (CHECK_SECONDS=${CHECK_SECONDS:-4800}): stopped"
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

# Files a patch creates that no MAINTAINERS entry covers: print them and fail.
unmaintained_files() {
	local file bad=0
	for file in $(sed -n 's/^ create mode [0-7]* //p' "$1"); do
		(cd "$TREE" && scripts/get_maintainer.pl --no-git --no-rolestats -f "$file" 2>/dev/null) |
			grep -q '@' && continue
		echo "$file: no MAINTAINERS entry covers it"
		bad=1
	done
	return $bad
}

checkpatch() {
	local p ignore
	while read -r p; do
		# In patches that touch only tools/perf (and MAINTAINERS), two
		# checks misfire on perf's own conventions: perf test reads a shell test's
		# description from line 2, so SPDX goes on line 3; and libc's
		# names (PRIx64, Dl_info, Elf64_Ehdr) are not CamelCase of ours.
		ignore=
		if ! grep -qv -e '^tools/perf/' -e '^MAINTAINERS$' < <(sed -n 's|^+++ b/||p' "$TOP/patches/$p"); then
			ignore="--ignore CAMELCASE,SPDX_LICENSE_TAG"
		fi
		# The series adds no MAINTAINERS entry of its own: checkpatch's
		# question about new files is answered by unmaintained_files.
		# The base commit is a release tarball without upstream history,
		# so checkpatch can't find the commits Fixes: tags name (they are
		# upstream's; the cover letter lists them).
		ignore="$ignore --ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID"
		# shellcheck disable=SC2086
		if "$TREE/scripts/checkpatch.pl" --strict --quiet --no-tree $ignore \
			"$TOP/patches/$p" >"$RESULTS/checkpatch.log" 2>&1 &&
			unmaintained_files "$TOP/patches/$p" >>"$RESULTS/checkpatch.log"; then
			record PASS "checkpatch/$p"
		else
			record FAIL "checkpatch/$p"
			sed 's/^/    | /' "$RESULTS/checkpatch.log"
		fi
	done < <(series_patches)
}

roundtrip() {
	local scratch
	scratch=$(mktemp -d)
	if PATCHES=$scratch bash "$TOP/scripts/export.sh" >/dev/null &&
		diff -ru "$TOP/patches" "$scratch" >"$RESULTS/roundtrip.diff"; then
		record PASS harness/export-roundtrip
	else
		record FAIL harness/export-roundtrip
		head -n 40 "$RESULTS/roundtrip.diff" | sed 's/^/    | /'
	fi
	rm -rf "$scratch"
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

# The L1 suite (tests/l1/run.sh): make check-host inside L1, its selftests
# and perf tests in an L1 of two CPUs, its guest in one of one (the script
# says why), each part judged there by L1's conditions; its results come
# here under l1/check-host/, counted and shown, not judged again
# (results.py check --nested), and l1/check-host passes when both parts
# did.  The guest is built here: L1 sees this machine's root read-only.
l1suite() {
	local part dir status=0 rc
	DEMO_GUEST=stock bash "$TOP/demo/guest-image.sh" >"$RESULTS/guest-image.log" 2>&1 ||
		echo "no guest image ($RESULTS/guest-image.log): check-host's guest/record will fail"
	for part in tests guest; do
		dir=$OUT/l1/suite-$part
		rc=0
		if [ $part = tests ]; then
			bash "$TOP/scripts/l1-run.sh" -t 2400 -n "suite-$part" bash "$TOP/tests/l1/run.sh" $part || rc=$?
		else
			L1_SMP=1 bash "$TOP/scripts/l1-run.sh" -t 900 -n "suite-$part" bash "$TOP/tests/l1/run.sh" $part || rc=$?
		fi
		[ "$(cat "$dir/check-host.status" 2>/dev/null)" = 0 ] || status=1
		cat "$dir/results.txt" >>"$RESULTS/results.txt" 2>/dev/null
		[ ! -s "$dir/check-host/results.txt" ] ||
			sed 's|^\([A-Z]*\) |\1 l1/check-host/|' "$dir/check-host/results.txt" >>"$RESULTS/results.txt"
		# Passing tests in a kernel whose log shows a report still fail.
		if [ $rc -ne 0 ] && [ "$(cat "$dir/check-host.status" 2>/dev/null)" = 0 ] &&
			! grep -q '^FAIL' "$dir/results.txt" 2>/dev/null; then
			record FAIL "l1/kernel-log-or-boot-$part"
		fi
	done
	if [ $status = 0 ]; then
		record PASS l1/check-host
	else
		record FAIL l1/check-host
	fi
	return 0
}

# perf's ORC unwinder on a kernel image's tables, with a stack built from
# them: an offline test, no L1 needed.  orc_kernel NAME IMAGE VERSION: the
# ORC test cases that take an image pass on IMAGE, whose ORC format is
# VERSION.  (A subshell: die ends the test.)
orc_kernel() (
	local name=$1 image=$2 version=$3 out=$RESULTS/orc-$1.out
	[ -s "$image" ] || die "no $image"
	"$PERF" test -vv --dso "$image" "ORC unwinding: kernel image" 2>&1 | tee "$out"
	grep -q 'ORC unwinding: kernel image (perf test --dso IMAGE) *: Ok$' "$out" &&
		grep -q 'ORC unwinding: kernel image found by build-id (perf test --dso IMAGE) *: Ok$' "$out" &&
		grep -q "ORC entries, format version $version," "$out"
)
# Debian's stock cloud kernel image, the demo guest's (demo/stock-kernel.sh,
# run by demo/deps.sh): ORC format 3.
orc_stock_kernel() { orc_kernel stock-kernel "$STOCK_KERNEL/vmlinuz" 3; }
# Debian's cloud kernel of the base series: the ORC format of 7.3, whose
# registers were renumbered (version 4).
orc_base_kernel() (
	bash "$TOP/scripts/orc-image.sh" || die "could not fetch Debian's $LINUX_SERIES cloud kernel"
	orc_kernel base-kernel "$ORC_IMAGE/vmlinuz" 4
)

host_caps() {
	python3 "$TOP/scripts/host-caps.py" --perf "perf=$PERF" >"$HOST_CAPS.new" || return 1
	harness_conditions >>"$HOST_CAPS.new"
	mv "$HOST_CAPS.new" "$HOST_CAPS" &&
		awk -F'\t' '!/^perf:/ { printf "  %-24s %-4s %s\n", $1, $2, $3 }' "$HOST_CAPS"
}

# perf's other builds (lib.sh's PERF_VARIANTS, build-perf.sh VARIANT): their
# guest tests pass, the ones their libraries allow; libunwind's DWARF
# unwinder unwinds guest user stacks, and only with the guest's own files.
# (A subshell: die ends the test, not the run.)
perf_variant() (
	v=$1 out=$RESULTS/perf-$v.out
	export PERF=$BUILD/perf-$v/perf PERF_TEST_ARGS="-v --dso $STOCK_KERNEL/vmlinuz"
	[ -x "$PERF" ] || die "no $PERF: build-perf.sh $v builds it"
	# What this build was built without: its skips' conditions.
	python3 "$TOP/scripts/host-caps.py" --only-perf --perf "perf-$v=$PERF" >>"$HOST_CAPS" || return 1
	# libunwind's DWARF unwinding of the host too (perf-fixes 8-11); the
	# build without libelf has no DWARF unwinding, nor that test.
	local -a more=()
	[ "$v" != unwind ] || more=("Test dwarf unwind")
	bash "$TOP/tests/perf-test.sh" "perf-$v" "Guest call chain resolution" \
		"Guest stack unwinding" "ORC unwinding" "${more[@]}" >"$out" 2>&1
	rc=$?
	grep -E '^(PASS|FAIL|SKIP) ' "$out"
	[ $rc -eq 0 ] || return 1
	grep -qx 'PASS perf-'"$v"'/Guest call chain resolution :: Guest call chain: guest and host contexts' "$STAGE_RESULTS" || return 1
	[ "$v" != unwind ] || {
		grep -qx 'PASS perf-unwind/Guest stack unwinding :: Guest stack unwinding: DWARF CFI of guest user code' "$STAGE_RESULTS" &&
			grep -qx 'PASS perf-unwind/Guest stack unwinding :: Guest stack unwinding: no host file of another build id' "$STAGE_RESULTS" &&
			grep -qx 'PASS perf-unwind/Guest stack unwinding :: Guest stack unwinding: files under --guestmount, no sideband' "$STAGE_RESULTS" &&
			grep -qx 'PASS perf-unwind/ORC unwinding :: ORC unwinding: kernel image (perf test --dso IMAGE)' "$STAGE_RESULTS" &&
			grep -qx 'PASS perf-unwind/ORC unwinding :: ORC unwinding: kernel image found by build-id (perf test --dso IMAGE)' "$STAGE_RESULTS"
	}
)

# What built before from the same inputs: tests/verified-builds (tracked,
# committed with the change that made it) and this checkout's own record
# since, $VERIFIED_BUILDS (build/verified-builds).  make check reads both
# and writes only its own record: no tracked file changes during a run
# (harness/tracked-files); make verified-builds copies it into
# tests/verified-builds, to commit.
export VERIFIED_BUILDS=$BUILD/verified-builds
verified_merge() {
	local tracked=$TOP/tests/verified-builds
	{
		grep '^#' "$tracked" 2>/dev/null || true
		cat "$tracked" "$VERIFIED_BUILDS" 2>/dev/null | grep -v '^#' | awk '!seen[$0]++'
	} >"$VERIFIED_BUILDS.new"
	mv "$VERIFIED_BUILDS.new" "$VERIFIED_BUILDS"
}

# Every patch builds on its own (scripts/bisect-build.sh, reading and
# writing $VERIFIED_BUILDS), and how many of them had been built before
# from the same inputs.
bisect_build() {
	local out=$RESULTS/bisect.out known
	bash "$TOP/scripts/bisect-build.sh" | tee "$out"
	[ "${PIPESTATUS[0]}" -eq 0 ] || return 1
	known=$(sed -n 's/.*all \([0-9]*\) patches build on their own (built before, same key: \([0-9]*\);.*/\2 of \1/p' "$out")
	stage_note "cached: ${known:-?} patches built before with the same inputs (tests/verified-builds, $VERIFIED_BUILDS)"
}

# make packages' path in its small configuration, when what it is made
# from changed since tests/verified-builds recorded it built (make packages
# PKG_SMALL=1 builds it whatever the record says): the packaging scripts,
# the configurations, the base, the compiler, the package's perf build and
# its selftests.
packages_small() {
	local key verified=$VERIFIED_BUILDS
	key=$( {
		cat "$TOP/scripts/packages.sh" "$TOP/scripts/packages-check.sh" \
			"$TOP/config/packages-small.config" "$TOP/config/base.conf" \
			"$TOP/tests/l1/kvm-selftests"
		gcc --version | head -n 1
		declare -f perf_package_make selftests_make
	} | sha1sum | cut -d' ' -f1)
	if grep -qx "packages-small $key" "$verified" 2>/dev/null; then
		stage_note "cached: built before from these inputs ($key in tests/verified-builds or $VERIFIED_BUILDS); PKG_SMALL=1 make packages builds it again"
		return 0
	fi
	PKG_SMALL=1 bash "$TOP/scripts/packages.sh" || return 1
	# Where scripts/bisect-build.sh, which keeps the other lines above its
	# own, leaves it: after the comments, before the builds of the series
	# (one order whoever writes it).
	{
		grep '^#' "$verified" 2>/dev/null || true
		echo "packages-small $key"
		grep -v -e '^#' -e '^packages-small ' "$verified" 2>/dev/null || true
	} >"$verified.new"
	mv "$verified.new" "$verified"
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

# The short demo: a real Linux guest recorded from L1, its flame graph drawn
# and checked; then the demo used wrongly.  One attempt: a recording that
# needs a second is a defect to find, not to hide.
demo_short() {
	DEMO_ATTEMPTS=1 DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$OUT/demo-short" &&
		bash "$TOP/demo/check-output.sh" "$OUT/demo-short"
}
# Several VMs at once, recorded together and told apart (demo/check-vms.sh).
demo_vms() {
	DEMO_ATTEMPTS=1 DEMO_GUESTS=2 DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$OUT/demo-vms" &&
		bash "$TOP/demo/check-vms.sh" "$OUT/demo-vms"
}

# The stages that run an emulator (QEMU's L1, Bochs), one after another.
emulator_lane() {
	timed harness/l1 harness l1
	# KVM's Intel code: guest_callchain_test under Bochs' emulated VMX.
	tested intel/vmx intel_vmx
	timed l1-suite l1suite
	# The VMs' opt-in in a kernel booted with lockdown=integrity (Debian's
	# with Secure Boot), through the administrator's kvm_guest_callchains too.
	tested l1/lockdown env L1_APPEND=lockdown=integrity \
		bash "$TOP/scripts/l1-run.sh" -t 600 -n lockdown bash "$TOP/tests/l1/lockdown-test.sh"
	tested bench/smoke bash "$TOP/bench/run.sh" --smoke
	tested demo/short demo_short
	tested demo/bad-use bash "$TOP/demo/bad-use-test.sh" "$OUT/demo-short"
	tested demo/vms demo_vms
	tested demo/vms-bad bash "$TOP/demo/vms-bad-sideband-test.sh" "$OUT/demo-vms"
}

# The others, beside them.
host_lane() {
	timed checkpatch checkpatch
	timed export-roundtrip roundtrip
	# The postable series: each applies on the base with what it needs and
	# after the others, and its To/Cc are what get_maintainer.pl says.
	tested series/apply bash "$TOP/scripts/series-check.sh"
	tested series/recipients bash "$TOP/scripts/recipients.sh" --check
	for v in $PERF_VARIANTS; do
		tested "build/perf-$v" bash "$TOP/scripts/build-perf.sh" "$v"
	done
	tested build/arm64 bash "$TOP/scripts/build-arm64.sh"
	tested build/bisect bisect_build
	for v in $PERF_VARIANTS; do
		tested "perf/$v" perf_variant "$v"
	done
	tested packages/small packages_small
	timed harness harness host
}

# The tracked files as the run found them: a run changes none.
tracked_before=$(git -C "$TOP" status --porcelain --untracked-files=no 2>/dev/null; git -C "$TOP" diff 2>/dev/null | sha1sum)
must deps bash "$TOP/scripts/deps.sh"
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
tested perf/orc-stock-kernel orc_stock_kernel
tested perf/orc-base-kernel orc_base_kernel

verified_merge
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
