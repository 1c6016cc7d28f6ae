#!/bin/bash
# Every test, run by 'make check' (and so by CI), from nothing, ending in
# "N passed, N failed, N skipped" and a non-zero exit on any failure.
# Results in $OUT/check: results.txt and a log per test.
#   deps -> tree -> checkpatch + export round trip -> the series apply as
#   their cover letters say, To/Cc up to date -> build (x86 kernel,
#   perf, selftests) -> arm64 build of the touched directories -> every
#   patch builds on its own, perf also without libelf and without libdw
#   (libunwind) -> their guest tests -> the packages of make packages, small -> harness tests (log check, injected WARN in
#   L1, contributor workflow) -> perf's ORC test on Debian's stock kernel
#   image -> guest_callchain_test on Intel VMX under Bochs -> the L1 suite (KVM selftests, perf test) ->
#   the VMs' opt-in in an L1 under lockdown=integrity ->
#   a smoke run of the benchmark -> the short demo and its bad uses -> two
#   VMs at once, one recording, told apart, and given the wrong sidebands
set -uo pipefail
. "$(dirname "$0")/lib.sh"

RESULTS=$OUT/check
rm -rf "$RESULTS"
mkdir -p "$RESULTS"
: >"$RESULTS/results.txt"
t0=$(date +%s)

record() { echo "$1 $2" >>"$RESULTS/results.txt"; echo "$1 $2"; }

summary() {
	local passed failed skipped
	echo "=== total: $(($(date +%s) - t0))s"
	passed=$(grep -c '^PASS' "$RESULTS/results.txt")
	failed=$(grep -c '^FAIL' "$RESULTS/results.txt")
	skipped=$(grep -c '^SKIP' "$RESULTS/results.txt")
	grep '^FAIL' "$RESULTS/results.txt" | sed 's/^/failed: /'
	echo "$passed passed, $failed failed, $skipped skipped"
	[ "$failed" -eq 0 ]
}

# A stage everything after it depends on: on failure, count it and stop.
must() {
	stage "$@" && return 0
	record FAIL "stage/$1"
	summary
	exit 1
}

# A stage that is itself a test: count it, go on either way.
tested() {
	local name=$1 log=$RESULTS/${1//\//-}.log
	shift
	if stage "$name" "$@" >"$log" 2>&1; then
		grep '^=== stage' "$log"
		record PASS "$name"
	else
		tail -n 40 "$log" | sed 's/^/    | /'
		record FAIL "$name"
	fi
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
		if ! sed -n 's|^+++ b/||p' "$TOP/patches/$p" | grep -qv -e '^tools/perf/' -e '^MAINTAINERS$'; then
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

harness() {
	local t name
	for t in "$TOP"/tests/harness/*-test.sh; do
		name=$(basename "$t" .sh)
		if bash "$t" >"$RESULTS/$name.log" 2>&1; then
			record PASS "harness/$name"
		else
			record FAIL "harness/$name"
			tail -n 60 "$RESULTS/$name.log" | sed 's/^/    | /'
		fi
	done
}

l1suite() {
	local rc=0
	bash "$TOP/scripts/l1-run.sh" -t 2400 -n suite bash "$TOP/tests/l1/run.sh" || rc=$?
	[ -f "$OUT/l1/suite/results.txt" ] && cat "$OUT/l1/suite/results.txt" >>"$RESULTS/results.txt"
	# Passing tests in a kernel whose log shows a report still fail the run.
	if [ $rc -ne 0 ] && ! grep -q '^FAIL' "$OUT/l1/suite/results.txt" 2>/dev/null; then
		record FAIL "l1/kernel-log-or-boot"
	fi
	return 0
}

# perf's ORC unwinder on the tables of Debian's stock cloud kernel image,
# the demo guest's kernel (demo/stock-kernel.sh), with a stack built from
# them: an offline test, no L1 needed.  (A subshell: die ends the test.)
orc_stock_kernel() (
	[ -s "$STOCK_KERNEL/vmlinuz" ] || die "no $STOCK_KERNEL/vmlinuz: demo/deps.sh fetches it"
	"$PERF" test -v --dso "$STOCK_KERNEL/vmlinuz" "ORC unwinding: kernel image" 2>&1 |
		tee "$RESULTS/orc-stock-kernel.out"
	grep -q 'ORC unwinding: kernel image.*: Ok$' "$RESULTS/orc-stock-kernel.out"
)

# perf's other builds (lib.sh's PERF_VARIANTS) of the last patch, as
# build/bisect left them: each is built as it says, and its guest tests
# pass, the ones its libraries allow; libunwind's DWARF unwinder unwinds
# guest user stacks, and only with the guest's own files.
# (A subshell: die ends the test, not the run.)
perf_variant() (
	v=$1 perf=$BUILD/bisect-perf-$1/perf out=$RESULTS/perf-$1.out
	[ -x "$perf" ] || die "no $perf: build/bisect builds it"
	opts=$("$perf" version --build-options)
	case $v in
	noelf) want="libelf: \[ OFF" ;;
	unwind) want="libunwind: \[ on" ;;
	esac
	echo "$opts" | grep -Eq "^ +$want" || { echo "$opts"; die "$perf is not built as $v says"; }
	"$perf" test -v "Guest call chain" "Guest stack unwinding" "ORC unwinding" >"$out" 2>&1
	[ "$v" != unwind ] || "$perf" test -v --dso "$STOCK_KERNEL/vmlinuz" \
		"ORC unwinding: kernel image" >>"$out" 2>&1
	grep -E '^ *[0-9.]+: .*: (Ok|FAILED!|Skip)' "$out"
	! grep -q 'FAILED!' "$out" || return 1
	grep -q 'Guest call chain: guest and host contexts *: Ok' "$out" || return 1
	[ "$v" != unwind ] || {
		grep -q 'Guest stack unwinding: DWARF CFI of guest user code *: Ok' "$out" &&
			grep -q 'Guest stack unwinding: no host file of another build id *: Ok' "$out" &&
			grep -q 'ORC unwinding: kernel image.*: Ok' "$out"
	}
)

must deps bash "$TOP/scripts/deps.sh"
# Only the demo needs these: without them its stages fail, the rest runs.
stage demo-deps bash "$TOP/demo/deps.sh" || record FAIL stage/demo-deps
must tree bash "$TOP/scripts/tree.sh"
stage checkpatch checkpatch
stage export-roundtrip roundtrip
# The postable series: each applies on the base with what it needs and after
# the others, and its To/Cc are what get_maintainer.pl says.
tested series/apply bash "$TOP/scripts/series-check.sh"
tested series/recipients bash "$TOP/scripts/recipients.sh" --check
must build-kernel bash "$TOP/scripts/build-kernel.sh"
must build-perf bash "$TOP/scripts/build-perf.sh"
must build-selftests bash "$TOP/scripts/build-selftests.sh"
tested build/arm64 bash "$TOP/scripts/build-arm64.sh"
tested build/bisect bash "$TOP/scripts/bisect-build.sh"
for v in $PERF_VARIANTS; do
	tested "perf/$v" perf_variant "$v"
done
# make packages' path, in its small configuration: a kernel package with
# KVM's modules and the perf package, their contents checked.
tested packages/small env PKG_SMALL=1 bash "$TOP/scripts/packages.sh"
stage harness harness
tested perf/orc-stock-kernel orc_stock_kernel
# KVM's Intel code: guest_callchain_test under Bochs' emulated VMX.
tested intel/vmx bash "$TOP/tests/bochs/vmx-test.sh"
stage l1-suite l1suite
# The VMs' opt-in in a kernel booted with lockdown=integrity (Debian's with
# Secure Boot), through the administrator's kvm_guest_callchains too.
tested l1/lockdown env L1_APPEND=lockdown=integrity \
	bash "$TOP/scripts/l1-run.sh" -t 600 -n lockdown bash "$TOP/tests/l1/lockdown-test.sh"
tested bench/smoke bash "$TOP/bench/run.sh" --smoke

# The short demo: a real Linux guest recorded from L1, its flame graph drawn
# and checked; then the demo used wrongly.
demo_short() {
	DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$OUT/demo-short" &&
		bash "$TOP/demo/check-output.sh" "$OUT/demo-short"
}
tested demo/short demo_short
tested demo/bad-use bash "$TOP/demo/bad-use-test.sh" "$OUT/demo-short"
# Several VMs at once, recorded together and told apart (demo/check-vms.sh).
demo_vms() {
	DEMO_GUESTS=2 DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$OUT/demo-vms" &&
		bash "$TOP/demo/check-vms.sh" "$OUT/demo-vms"
}
tested demo/vms demo_vms
tested demo/vms-bad bash "$TOP/demo/vms-bad-sideband-test.sh" "$OUT/demo-vms"
summary
