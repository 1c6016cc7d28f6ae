#!/bin/bash
# scripts/host-caps.py, the probe of the conditions tests/expected's skips
# name: on two made-up hosts (--root), one with every capability the file
# probes look for and one with none, each condition answered the right
# way; on this host, every condition tests/expected names answered, with
# its evidence.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"
caps() { python3 "$TOP/scripts/host-caps.py" "$@"; }

host() {
	mkdir -p "$1/proc/sys/kernel"
	echo 7.3.0-made-up >"$1/proc/sys/kernel/osrelease"
	echo "$2" >"$1/proc/machine"
}
host "$tmp/bare" x86_64
printf 'vendor_id\t: AuthenticAMD\n' >"$tmp/bare/proc/cpuinfo"
host "$tmp/full" x86_64
f=$tmp/full
printf 'vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.00GHz\nflags\t\t: fpu svm pku pcid\n' >"$f/proc/cpuinfo"
touch "$f/proc/schedstat" "$f/hw-breakpoint-fires" "$f/tsc-in-mmap-page"
mkdir -p "$f/sys/kernel/tracing" "$f/sys/bus/event_source/devices/cpu/caps" \
	"$f/sys/bus/event_source/devices/cpu_core" "$f/sys/bus/event_source/devices/uncore_imc_0" \
	"$f/sys/bus/event_source/devices/ibs_op" "$f/sys/bus/event_source/devices/intel_pt" \
	"$f/dev/dri" "$f/usr/lib/debug/boot" "$f/sys/module/nmi_sampler"
echo 'function_graph function nop' >"$f/sys/kernel/tracing/available_tracers"
echo 'schedule' >"$f/sys/kernel/tracing/available_filter_functions"
echo 4 >"$f/sys/bus/event_source/devices/cpu/type"
touch "$f/sys/bus/event_source/devices/cpu/caps/branches" "$f/dev/dri/card0" \
	"$f/usr/lib/debug/boot/vmlinux-7.3.0-made-up"

file_conditions='no-pmu no-hw-breakpoint no-tsc-in-mmap-page no-schedstats no-function-tracer
no-uncore no-amd-ibs no-intel-pt no-lbr not-intel-hybrid not-intel no-kernel-debuginfo no-drm-pmu
no-svm no-pku no-pcid no-nmi-sampler no-nmi-source'
for h in bare full; do
	caps --root "$tmp/$h" >"$tmp/$h.caps" || bad "host-caps.py --root $tmp/$h failed"
	want=$([ $h = bare ] && echo yes || echo no)
	for c in $file_conditions; do
		have=$(awk -F'\t' -v c="$c" '$1 == c { print $2 }' "$tmp/$h.caps")
		[ "$have" = "$want" ] || bad "the $h host: $c is '${have:-not answered}', not $want ($(grep "^$c	" "$tmp/$h.caps"))"
	done
done
[ $fail -eq 0 ] && ok "both made-up hosts answered right: $(echo $file_conditions | wc -w) conditions each"

# The conditions of an Intel CPU without a PMU (a VM's) whose model name
# has no frequency: only there, not on the AMD host nor the Intel one
# with a PMU and "@ 2.00GHz".
host "$tmp/intel-vm" x86_64
printf 'vendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) Processor\n' >"$tmp/intel-vm/proc/cpuinfo"
caps --root "$tmp/intel-vm" >"$tmp/intel-vm.caps" || bad "host-caps.py --root $tmp/intel-vm failed"
for c in intel-without-pmu intel-model-without-frequency; do
	for h in bare full intel-vm; do
		want=$([ $h = intel-vm ] && echo yes || echo no)
		have=$(awk -F'\t' -v c="$c" '$1 == c { print $2 }' "$tmp/$h.caps")
		[ "$have" = "$want" ] || bad "the $h host: $c is '${have:-not answered}', not $want ($(grep "^$c	" "$tmp/$h.caps"))"
	done
done
[ $fail -eq 0 ] && ok "an Intel VM without a PMU nor a frequency in its model name: its two conditions, and only there"

# This host: every condition tests/expected names is answered (the perf
# build's with perf's own answer), each with its evidence.
if [ -x "$PERF" ]; then
	caps --perf "perf=$PERF" >"$tmp/here.caps" || bad "host-caps.py on this host failed"
	harness_conditions >>"$tmp/here.caps"
	for v in $PERF_VARIANTS; do
		[ -x "$BUILD/perf-$v/perf" ] && caps --only-perf --perf "perf-$v=$BUILD/perf-$v/perf" >>"$tmp/here.caps"
	done
	grep -oP '\t(skip|not run) if \K.+?(?=: )' "$TOP/tests/expected" | sed 's/ or /\n/g' | sort -u |
		while read -r c; do
			case $c in perf-noelf:*|perf-unwind:*) [ -x "$BUILD/${c%%:*}/perf" ] || continue ;; esac
			grep -qP "^\Q$c\E\t(yes|no)\t." "$tmp/here.caps" || echo "$c"
		done >"$tmp/unanswered"
	[ -s "$tmp/unanswered" ] && bad "conditions of tests/expected this host's probe does not answer: $(paste -sd' ' "$tmp/unanswered")" ||
		ok "this host: every condition tests/expected names answered"
	grep -v '^perf' "$tmp/here.caps"
else
	bad "no perf at $PERF: make check builds it before the harness tests"
fi
exit $fail
