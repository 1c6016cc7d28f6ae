#!/bin/bash
# perf's other builds (lib.sh's PERF_VARIANTS, scripts/build-perf.sh
# VARIANT; make check's perf/VARIANT): their guest tests pass, those their
# libraries allow (their skips' conditions: what the build was built
# without, added to $HOST_CAPS); libunwind's DWARF unwinder unwinds guest
# user stacks, and only with the guest's own files.  Results go to
# $STAGE_RESULTS as perf-VARIANT/... (tests/perf-test.sh).
#
#   tests/perf/variant-test.sh VARIANT
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
v=${1:?usage: $0 VARIANT}
[ -n "${STAGE_RESULTS:-}" ] || die "STAGE_RESULTS: the file the results go to"
out=${STAGE_RESULTS%.*}-perf-$v.out
export PERF=$BUILD/perf-$v/perf PERF_TEST_ARGS="-v --dso $STOCK_KERNEL/vmlinuz"
[ -x "$PERF" ] || die "no $PERF: build-perf.sh $v builds it"
python3 "$TOP/scripts/host-caps.py" --only-perf --perf "perf-$v=$PERF" >>"$HOST_CAPS" ||
	die "host-caps.py --only-perf failed"
# libunwind's DWARF unwinding of the host too (perf-fixes 10-13); the
# build without libelf has no DWARF unwinding, nor that test.
more=()
[ "$v" != unwind ] || more=("Test dwarf unwind")
bash "$TOP/tests/perf-test.sh" "perf-$v" "Guest call chain resolution" \
	"Guest machines" "Guest stack unwinding" "ORC unwinding" "Kernel image kallsyms" \
	"${more[@]}" >"$out" 2>&1
rc=$?
grep -E '^(PASS|FAIL|SKIP) ' "$out"
[ $rc -eq 0 ] || exit 1
# must NAME...: each of these passed.
must() {
	local t
	for t in "$@"; do
		grep -qxF "PASS perf-$v/$t" "$STAGE_RESULTS" || { echo "did not pass: perf-$v/$t"; return 1; }
	done
}
must 'Guest call chain resolution :: Guest call chain: guest and host contexts' \
	'Kernel image kallsyms :: Kernel image kallsyms: kernel image (perf test --dso IMAGE)' || exit 1
[ "$v" != unwind ] || must \
	'Guest stack unwinding :: Guest stack unwinding: DWARF CFI of guest user code' \
	'Guest stack unwinding :: Guest stack unwinding: no host file of another build id' \
	'Guest stack unwinding :: Guest stack unwinding: files under --guestmount, no sideband' \
	'ORC unwinding :: ORC unwinding: kernel image (perf test --dso IMAGE)' \
	'ORC unwinding :: ORC unwinding: kernel image found by build-id (perf test --dso IMAGE)'
