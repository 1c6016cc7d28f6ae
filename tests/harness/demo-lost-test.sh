#!/bin/bash
# The demo's accounting of a recording, on made-up demo outputs and on
# recordings made here (no L1):
#   - demo/recording-check.sh passes a recording that lost at most
#     MAX_LOST_PERCENT, and fails, with the figure, one that lost more, one
#     whose guest sideband lost events, one that has no recording.txt, one
#     whose guest samples are under MIN_GUEST_SHARE_PERCENT (of several
#     VMs', MIN_VMS_GUEST_SHARE_PERCENT) of its samples or are none, and
#     one with more than MAX_UNKNOWN_THREAD_PERCENT of them the unknown
#     guest thread's: the made-up figures are made from those bounds, as
#     demo/thresholds.conf has them (demo/checks.py threshold);
#   - demo/recording-counts.sh counts the samples and what a recording
#     lost: a ring of one page cannot hold one 8 KiB stack sample, so
#     every sample is lost; a ring of 16 MiB loses none.
# Exit status 4 (skipped) when perf can't record here and the rest passed.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ -x "$PERF" ] || die "no perf at $PERF: run 'make perf'"

# A made-up demo output of the stock guest, recording.txt aside.
mkdir "$tmp/demo"
echo stock >"$tmp/demo/demo-guest"
# script GUEST UNKNOWN: perf-kvm-script.txt with GUEST guest samples in
# ping's leaf, UNKNOWN more of the unknown guest thread's.
script() {
	local i
	for i in $(seq "$1"); do
		printf 'ping  100/100  [000] 1.%06d: cpu-clock:\n\t    55555555 ping_stroke+0x1 (/bin/ping)\n\n' "$i"
	done
	for i in $(seq "$2"); do
		printf '[unknown guest thread]  -1/-1  [000] 2.%06d: cpu-clock:\n\t    7f0000001234 [unknown] ([unknown])\n\n' "$i"
	done
}
# recording LOST SIDEBAND_LOST [SAMPLES]: recording.txt with those figures
# (SAMPLES recorded, 1000 unless given).
recording() {
	local samples=${3:-1000}
	printf 'rate 250\nring_mib 16\nseconds 8\ncpus 1\nvcpus %s\ntook 12\nsamples %s\nlost %s\nlost_chunks 1\nlost_percent %s\nsideband_lost %s\nattempts 1\n' \
		"${vcpus:-1}" \
		"$samples" "$1" "$(awk -v l="$1" -v s="$samples" 'BEGIN { printf "%.2f", 100 * l / (s + l) }')" "$2" \
		>"$tmp/demo/recording.txt"
}
check() { bash "$TOP/demo/recording-check.sh" "$tmp/demo" >"$tmp/check.out" 2>&1; }
# passes|fails WHAT PATTERN: recording-check.sh passes (or fails) and says
# PATTERN (grep -F).
passes() {
	if check && grep -qF "$2" "$tmp/check.out"; then ok "$1"; else bad "$1: $(cat "$tmp/check.out")"; fi
}
fails() {
	if ! check && grep -qF "$2" "$tmp/check.out"; then ok "$1"; else bad "$1: $(cat "$tmp/check.out")"; fi
}

# The bounds, and the figures the checks print of them: pct A B is A of B
# as a percentage with D decimals.
th() { python3 "$TOP/demo/checks.py" threshold "$1"; }
lost_max=$(th MAX_LOST_PERCENT) share=$(th MIN_GUEST_SHARE_PERCENT)
vms_share=$(th MIN_VMS_GUEST_SHARE_PERCENT) unknown_max=$(th MAX_UNKNOWN_THREAD_PERCENT)
pct() { awk -v a="$1" -v b="$2" -v d="$3" 'BEGIN { printf "%.*f", d, 100 * a / b }'; }
int() { awk "BEGIN { printf \"%d\", $1 }"; }

# 960 guest samples: of 1000 recorded, as the demo has them.
script 960 0 >"$tmp/demo/perf-kvm-script.txt"
lost=$(int "1000 * $lost_max / 200")	# half the bound
recording "$lost" 0
passes "$(pct "$lost" $((1000 + lost)) 2)% lost passes, with the figure" \
	"lost $lost of $((1000 + lost)) samples ($(pct "$lost" $((1000 + lost)) 2)%"
lost=$(int "1000 * $lost_max * 4 / 100")	# four times the bound
recording "$lost" 0
fails "$(pct "$lost" $((1000 + lost)) 2)% lost fails, with the figure" \
	"FAILED: the recording lost $lost of $((1000 + lost)) samples ($(pct "$lost" $((1000 + lost)) 2)%, more than $lost_max%)"
# The samples asked for: 250 a second for 8 s on one CPU, 2000; as many
# vCPUs, on one CPU, ask no more.
asked=$(th MIN_ASKED_SAMPLES_PERCENT)
recorded=$(int "2000 * $asked / 100")
vcpus=3 recording 0 0 "$recorded"
passes "$recorded samples recorded, $asked% of those asked for, pass" \
	"ok: $recorded samples recorded, $(pct "$recorded" 2000 1)% of the 2000 asked for (250 a second for 8 s on 1 CPU)"
recorded=$((recorded - 20))
recording 0 0 "$recorded"
fails "fewer samples than $asked% of those asked for fail, with the figure" \
	"FAILED: only $recorded samples recorded, $(pct "$recorded" 2000 1)% of the 2000 asked for (250 a second for 8 s on 1 CPU) (need $asked%)"
sed -i '/^cpus /d' "$tmp/demo/recording.txt"
fails "a recording.txt that does not say its CPUs fails" "FAILED: recording.txt does not say the rate, seconds, CPUs and vCPUs"
recording 0 2
fails "a sideband that lost events fails" "FAILED: the guest's sideband lost events (2 PERF_RECORD_LOST records)"
# share_cases LEAST WHO: the guest samples at LEAST% of the recording's
# pass, at less fail.
share_cases() {
	local least=$1 who=$2 recorded
	recorded=$(int "960 * 100 / $least")
	recording 0 0 "$recorded"
	passes "${who}guest samples $least% of the recording's pass" \
		"ok: 960 guest samples in perf kvm script, $(pct 960 "$recorded" 1)% of the recording's $recorded (at least $least%)"
	recorded=$(int "960 * 100 / ($least * 0.9)")
	recording 0 0 "$recorded"
	fails "${who}guest samples under $least% of the recording's fail, with the figure" \
		"FAILED: only 960 guest samples in perf kvm script, $(pct 960 "$recorded" 1)% of the recording's $recorded (need $least%)"
}
share_cases "$share" ""
# Several VMs, recorded by cgroup: their vCPU threads' host samples count.
printf 'demo-stock stock 2 75 2\ndemo-off stock 0 336 1\n' >"$tmp/demo/vms"
share_cases "$vms_share" "several VMs: "
rm "$tmp/demo/vms"
recording 0 0
printf '\n' >"$tmp/demo/perf-kvm-script.txt"
fails "no guest samples fail" "FAILED: only 0 guest samples in perf kvm script, 0.0% of the recording's 1000 (need $share%)"
# The unknown guest thread's samples: just under the bound, just over.
unknown=$(int "960 * $unknown_max / 100 - 1")
script $((960 - unknown)) "$unknown" >"$tmp/demo/perf-kvm-script.txt"
passes "$(pct "$unknown" 960 1)% of the guest samples on the unknown guest thread pass" \
	"ok: $unknown of 960 guest samples are the unknown guest thread's ($(pct "$unknown" 960 1)%; at most $unknown_max%)"
unknown=$((unknown + 2))
script $((960 - unknown)) "$unknown" >"$tmp/demo/perf-kvm-script.txt"
fails "$(pct "$unknown" 960 1)% of the guest samples on the unknown guest thread fail, with the figure" \
	"FAILED: $unknown of 960 guest samples are the unknown guest thread's ($(pct "$unknown" 960 1)%, more than $unknown_max%): the sideband did not place them"
rm "$tmp/demo/recording.txt"
fails "no recording.txt fails" 'FAILED: no recording.txt'

# Recordings made here, which perf may not be allowed to make.
spin=(sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done')
if ! "$PERF" record -q -e cpu-clock -F 2000 --call-graph dwarf -m 1 -o "$tmp/lossy.data" \
	-- "${spin[@]}" >"$tmp/record.log" 2>&1; then
	if grep -qi 'permission\|paranoid\|not supported' "$tmp/record.log"; then
		echo "skipped: perf can't record here: $(head -n 1 "$tmp/record.log")"
		[ $fail -eq 0 ] && exit 4
		exit 1
	fi
	bad "perf record failed: $(head -n 3 "$tmp/record.log")"
fi
"$PERF" record -q -e cpu-clock -F 2000 --call-graph dwarf -m 16M -o "$tmp/good.data" \
	-- "${spin[@]}" >>"$tmp/record.log" 2>&1 || bad "perf record failed"

read -r samples lost chunks < <(bash "$TOP/demo/recording-counts.sh" "$tmp/lossy.data")
if [ "${samples:-x}" = 0 ] && [ "${lost:-0}" -gt 0 ] && [ "${chunks:-0}" -gt 0 ]; then
	ok "a one-page ring: $samples samples, $lost lost in $chunks PERF_RECORD_LOST"
else
	bad "a one-page ring: counted '$samples $lost $chunks', want no samples and some lost"
fi
read -r samples lost chunks < <(bash "$TOP/demo/recording-counts.sh" "$tmp/good.data")
if [ "${samples:-0}" -gt 10 ] && [ "$lost" = 0 ] && [ "$chunks" = 0 ]; then
	ok "a 16 MiB ring: $samples samples, none lost"
else
	bad "a 16 MiB ring: counted '$samples $lost $chunks', want samples and none lost"
fi
if ! bash "$TOP/demo/recording-counts.sh" "$tmp/none.data" >/dev/null 2>&1; then
	ok "no perf.data: recording-counts.sh fails"
else
	bad "no perf.data: recording-counts.sh succeeds"
fi
exit $fail
