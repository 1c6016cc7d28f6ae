#!/bin/bash
# make check-host: the tests that need the series' kernel, on a host booted
# into it: the kernel make packages built, on the machine itself, no
# emulator of ours (make check runs it inside L1, which is such a host):
#
#   kvm/PROGRAM[/SUBTEST]  the KVM selftests of tests/l1/kvm-selftests
#   kernel/perf/...        the perf tests that need the series' kernel
#                          (tests/perf-test.sh kernel/perf)
#   perf/...               with CHECK_HOST_PERF=all, the rest of perf's
#                          tests as make check runs them on its host
#   qemu/...               the guests' QEMU (patches/qemu): QEMU's own
#                          functional test of the series under this host's
#                          KVM, the level KVM holds after each change, the
#                          commands while the VM is destroyed
#                          (tests/l1/qemu-test.sh)
#   guest/record           a real guest recorded: the demo's stock guest
#                          (Debian's cloud kernel, programs without frame
#                          pointers) booted under this host's KVM with the
#                          guests' QEMU, opted in by QMP's
#                          set-guest-callchains, recorded with perf kvm for CHECK_HOST_SECONDS (8),
#                          symbolised and checked (demo/in-l1.sh,
#                          demo/report.sh without drawing,
#                          demo/recording-check.sh); the host's own reads
#                          of the guest recorded beside its sideband
#                          (DEMO_AGENTLESS=both: perf kvm kallsyms, perf
#                          kvm tasks -o), which make check compares
#                          (tests/demo/agentless-test.sh)
#
# judged against tests/expected's entries under those names
# (scripts/results.py check --only), with this host's conditions probed
# first (scripts/host-caps.py: no PMU, no SVM, ...).  The exit status is
# the verdict; results, logs and the conditions in CHECK_HOST_OUT
# (build/out/check-host).  CHECK_HOST_PARTS ("selftests perf qemu guest")
# runs some of the four only, judged as such.
#
# What it runs: what make packages installed (/opt/perf-guest-callchains:
# bin/perf, bin/kvm_guest_callchains, libexec/kvm-selftests, and the test
# guest in share/test-guest where the package has it;
# /opt/qemu-guest-callchains/bin/qemu-system-x86_64) where it is there,
# else this checkout's builds (make build, make deps' guests' QEMU); QEMU's
# functional test from the QEMU tree scripts/guest-qemu.sh makes.  A guest image missing from
# both is built (demo/stock-kernel.sh fetches Debian's kernel; as for make
# demo, Chromium and the rest of make deps are not needed).  As root:
# the tests load a module, open /dev/kvm and sample the whole host.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

out=${CHECK_HOST_OUT:-$OUT/check-host}
perf_scope=${CHECK_HOST_PERF:-kernel}
seconds=${CHECK_HOST_SECONDS:-8}
package=${CHECK_HOST_PACKAGE:-/opt/perf-guest-callchains}
parts=" ${CHECK_HOST_PARTS:-selftests perf qemu guest} "
case $perf_scope in
kernel | all) ;;
*) die "CHECK_HOST_PERF must be kernel or all, not '$perf_scope'" ;;
esac
# The names of tests/expected this run records (lib.sh's CHECK_HOST_SCOPE
# is all of them).
only=
for part in $parts; do
	case $part in
	selftests) only+=,kvm/ ;;
	perf) only+=,kernel/perf/; [ "$perf_scope" != all ] || only+=,perf/ ;;
	qemu) only+=,qemu/ ;;
	guest) only+=,guest/ ;;
	*) die "CHECK_HOST_PARTS: selftests, perf, qemu or guest, not '$part'" ;;
	esac
done
only=${only#,}
[ -n "$only" ] || die "CHECK_HOST_PARTS names nothing to run"
[ "$(id -u)" = 0 ] || die "make check-host runs as root (it loads a module and samples the whole host)"
[ -c /dev/kvm ] || die "no /dev/kvm: this host can't run KVM guests"
knob=/sys/module/kvm/parameters/enable_guest_callchains
[ -e "$knob" ] || die "$knob is missing: $(uname -r) is not the series' kernel (boot the kernel make packages built)"

# The package's files where it is installed, else this checkout's builds.
if [ -x "$package/bin/perf" ] && [ -d "$package/libexec/kvm-selftests" ]; then
	export PERF=$package/bin/perf SELFTESTS=$package/libexec/kvm-selftests
	export KVM_GUEST_CALLCHAINS_TOOL=$package/bin/kvm_guest_callchains
	export PERF_EXEC_PATH=$package/libexec/perf-core
	from="the package in $package"
	# Its test guest, where make packages could ship one.
	if [ -s "$package/share/test-guest/stock/initramfs.cpio.gz" ]; then
		export DEMOBUILD=$package/share/test-guest STOCK_KERNEL=$package/share/test-guest/stock-kernel
		from+=" (its test guest too)"
	fi
else
	from="this checkout's builds in $BUILD"
fi
# The guests' QEMU: make packages' where it is installed.
qemu_package=${CHECK_HOST_QEMU_PACKAGE:-/opt/qemu-guest-callchains}
if [ -x "$qemu_package/bin/qemu-system-x86_64" ]; then
	export GUEST_QEMU=$qemu_package/bin/qemu-system-x86_64
	from+="; QEMU from the package in $qemu_package"
fi
[ -x "$PERF" ] || die "no perf at $PERF: install make packages' perf package, or run make build"
missing=$(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests" |
	while read -r t; do [ -x "$SELFTESTS/$t" ] || echo "$t"; done)
[ -z "$missing" ] || die "no ${missing//$'\n'/ } in $SELFTESTS: install make packages' perf package, or run make build"
rm -rf "$out"
mkdir -p "$out/tests"
results=$out/results.txt
: >"$results"
export HOST_CAPS=$out/host-caps.txt
say "$(uname -r) on $(nproc) CPUs; perf and selftests from $from"

# The harness's NMI source, for the selftests' NMI cases where no PMU is
# (tests/nmi-sampler): where it was built for the running kernel.
if [ -d /sys/module/nmi_sampler ]; then
	say "nmi_sampler is loaded"
elif [ -f "$NMI_SAMPLER" ] && [ "$(modinfo -F vermagic "$NMI_SAMPLER" 2>/dev/null | cut -d' ' -f1)" = "$(uname -r)" ]; then
	insmod "$NMI_SAMPLER" || say "insmod $NMI_SAMPLER failed"
else
	say "no nmi_sampler built for $(uname -r): the NMI cases skip (no-nmi-sampler)"
fi

# This host's conditions, and the harness's own: perf test runs here
# without --dso; the package's perf is built with SDT, the tree's not.
python3 "$TOP/scripts/host-caps.py" --kvm-uapi "$TREE/include/uapi/linux/kvm.h" --perf "perf=$PERF" >"$HOST_CAPS" || die "scripts/host-caps.py failed"
if [ "$PERF" = "$package/bin/perf" ]; then
	harness_conditions | grep -v '^perf:without-sdt'
	printf 'perf:without-sdt\tno\tthe package'"'"'s perf (lib.sh perf_package_make)\n'
else
	harness_conditions
fi >>"$HOST_CAPS"
awk -F'\t' '!/^perf:/ { printf "  %-24s %-4s %s\n", $1, $2, $3 }' "$HOST_CAPS"

# run_one NAME COMMAND...: a KVM selftest program, a result from its exit
# status (4, KSFT_SKIP: skipped) and one per sub-test it reports.
run_one() {
	local name=$1 log start rc verdict
	shift
	log=$out/tests/${name//\//_}.log
	start=$(date +%s)
	timeout -k 5 "${TEST_TIMEOUT:-300}" "$@" >"$log" 2>&1
	rc=$?
	case $rc in
	0) verdict=PASS ;;
	4) verdict=SKIP ;;
	124) verdict=FAIL; echo "timed out after ${TEST_TIMEOUT:-300}s" >>"$log" ;;
	*) verdict=FAIL ;;
	esac
	python3 "$TOP/scripts/results.py" ktap "$name" <"$log" >"$log.results"
	printf '%s %s (%ds, exit status %d; sub-tests: %s)\n' "$verdict" "$name" \
		$(($(date +%s) - start)) $rc "$(python3 "$TOP/scripts/results.py" count "$log.results")"
	if [ $verdict != PASS ] || grep -q '^[FS]' "$log.results"; then
		grep '^[FS]' "$log.results" | sed 's/^/    /'
		tail -n 25 "$log" | sed 's/^/    | /'
	fi
	{
		echo "$verdict $name"
		cat "$log.results"
	} >>"$results"
}

if [[ $parts == *" selftests "* ]]; then
	while read -r t; do
		case "$t" in ''|'#'*) continue ;; esac
		run_one "kvm/${t#*/}" "$SELFTESTS/$t"
	done <"$TOP/tests/l1/kvm-selftests"
fi

# perf_tests PREFIX: tests/perf-test.sh's run, said in a line.
perf_tests() {
	local start rc=0
	start=$(date +%s)
	STAGE_RESULTS=$results bash "$TOP/tests/perf-test.sh" "$1" >"$out/tests/perf-${1//\//-}.out" 2>&1 || rc=$?
	echo "perf test $1: exit status $rc, $(python3 "$TOP/scripts/results.py" count "$results" "$1") ($(($(date +%s) - start))s)"
	grep "^[FS][A-Z]* $1/" "$results" | sed 's/^/    /'
	[ $rc -eq 0 ] || tail -n 20 "$out/tests/perf-${1//\//-}.out" | sed 's/^/    | /'
}
if [[ $parts == *" perf "* ]]; then
	perf_tests kernel/perf
	[ "$perf_scope" != all ] || perf_tests perf
fi

if [[ $parts == *" qemu "* ]]; then
	start=$(date +%s)
	STAGE_RESULTS=$results bash "$TOP/tests/l1/qemu-test.sh" >"$out/tests/qemu.log" 2>&1
	echo "the guests' QEMU: $(python3 "$TOP/scripts/results.py" count "$results" qemu) ($(($(date +%s) - start))s)"
	grep '^[FS][A-Z]* qemu/' "$results" | sed 's/^/    /'
	! grep -q '^FAIL qemu/' "$results" || tail -n 40 "$out/tests/qemu.log" | sed 's/^/    | /'
fi

# A real guest, recorded as a user would, and its recording checked.
guest_record() {
	[ -s "$DEMOBUILD/stock/initramfs.cpio.gz" ] || {
		bash "$TOP/demo/stock-kernel.sh" && DEMO_GUEST=stock bash "$TOP/demo/guest-image.sh"
	} || return 1
	mkdir -p "$out/guest" &&
		DEMO_ATTEMPTS=1 DEMO_GUEST=stock DEMO_AGENTLESS=both bash "$TOP/demo/in-l1.sh" "$out/guest" "$seconds" &&
		DEMO_DRAW=0 bash "$TOP/demo/report.sh" "$out/guest" &&
		bash "$TOP/demo/recording-check.sh" "$out/guest"
}
start=$(date +%s)
if [[ $parts != *" guest "* ]]; then
	:
elif guest_record >"$out/tests/guest-record.log" 2>&1; then
	echo "PASS guest/record" >>"$results"
	echo "PASS guest/record ($(($(date +%s) - start))s)"
else
	echo "FAIL guest/record" >>"$results"
	echo "FAIL guest/record ($(($(date +%s) - start))s)"
	tail -n 30 "$out/tests/guest-record.log" | sed 's/^/    | /'
fi

echo "=== make check-host: $(uname -r), judged against tests/expected ($only)"
python3 "$TOP/scripts/results.py" check --caps "$HOST_CAPS" --only "$only" "$results" "$TOP/tests/expected"
