#!/bin/bash
# The demo's accounting of lost samples, on recordings made here (no L1):
#   - demo/recording-counts.sh counts the samples and what a recording
#     lost: a ring of one page cannot hold one 8 KiB stack sample, so
#     every sample is lost; a ring of 16 MiB loses none;
#   - demo/recording-check.sh passes a recording that lost at most 1%,
#     and fails, with the figure, one that lost more, one whose guest
#     sideband lost events, and one that has no recording.txt.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

[ -x "$PERF" ] || die "no perf at $PERF: run 'make perf'"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }

spin=(sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i + 1)); done')
if ! "$PERF" record -q -e cpu-clock -F 2000 --call-graph dwarf -m 1 -o "$tmp/lossy.data" \
	-- "${spin[@]}" >"$tmp/record.log" 2>&1; then
	if grep -qi 'permission\|paranoid\|not supported' "$tmp/record.log"; then
		echo "skipped: perf can't record here: $(head -n 1 "$tmp/record.log")"
		exit 0
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

# A made-up demo output: 200 guest samples of ping, and recording.txt.
mkdir "$tmp/demo"
echo stock >"$tmp/demo/demo-guest"
for i in $(seq 200); do
	printf 'ping  100/100  [000] 1.%06d: cpu-clock:\n\t55555555 ping_stroke+0x1 (/bin/ping)\n\n' "$i"
done >"$tmp/demo/perf-kvm-script.txt"
# recording LOST SIDEBAND_LOST: recording.txt with those figures
recording() {
	printf 'rate 250\nring_mib 16\nseconds 8\ntook 12\nsamples 1000\nlost %s\nlost_chunks 1\nlost_percent %s\nsideband_lost %s\nattempts 1\n' \
		"$1" "$(awk -v l="$1" 'BEGIN { printf "%.2f", 100 * l / (1000 + l) }')" "$2" >"$tmp/demo/recording.txt"
}
check() { bash "$TOP/demo/recording-check.sh" "$tmp/demo" >"$tmp/check.out" 2>&1; }
recording 5 0
if check && grep -q 'lost 5 of 1005 samples (0.50%' "$tmp/check.out"; then
	ok "0.5% lost passes, with the figure"
else
	bad "0.5% lost: $(cat "$tmp/check.out")"
fi
recording 40 0
if ! check && grep -q 'FAILED: the recording lost 40 of 1040 samples (3.85%, more than 1%)' "$tmp/check.out"; then
	ok "3.85% lost fails, with the figure"
else
	bad "3.85% lost: $(cat "$tmp/check.out")"
fi
recording 0 2
if ! check && grep -q "FAILED: the guest's sideband lost events (2 PERF_RECORD_LOST records)" "$tmp/check.out"; then
	ok "a sideband that lost events fails"
else
	bad "a sideband that lost events: $(cat "$tmp/check.out")"
fi
rm "$tmp/demo/recording.txt"
if ! check && grep -q 'FAILED: no recording.txt' "$tmp/check.out"; then
	ok "no recording.txt fails"
else
	bad "no recording.txt: $(cat "$tmp/check.out")"
fi
exit $fail
