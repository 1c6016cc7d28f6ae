#!/bin/bash
# The short demo of 'make check', RUNS times in a row, each checked, with a
# table of what each recording holds: the figures demo/thresholds.conf's
# bounds are set from (docs/measurements.md, "Demo bounds"):
#
#   demo/soak.sh [RUNS] [HOG] [GUESTS]   ('make demo-soak RUNS=10 HOG=4 GUESTS=2')
#
# HOG=N runs 'stress-ng --cpu N' beside every run: the demo on a busy
# machine.  GUESTS=1 (the default): the one-VM demo (demo/check-output.sh),
# with per run the samples recorded (of those asked for), lost, the guest
# samples perf kvm script shows, the unknown guest thread's, those with a
# chain, each program's hot leaf's share and the flame graph's PNG size.
# GUESTS=2: the two-VM demo (demo/check-vms.sh), with each VM's share of
# the guest samples, demo-stock's hot leaves' share of its samples and
# demo-off's instruction pointers resolved.  Outputs in $OUT/demo-soak/RUN;
# the table in $OUT/demo-soak/table.txt.  Exit status 1 if any run failed.
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

runs=${1:-10} hog=${2:-0} guests=${3:-1}
case "$runs$hog$guests" in
*[!0-9]*) die "usage: $0 [RUNS] [HOG] [GUESTS]" ;;
esac
case $guests in 1 | 2) ;; *) die "GUESTS must be 1 or 2, not $guests" ;; esac
dir=$OUT/demo-soak
rm -rf "$dir"
mkdir -p "$dir"
hog_pid=
if [ "$hog" -gt 0 ]; then
	command -v stress-ng >/dev/null || as_root apt-get install -y -q stress-ng >/dev/null ||
		die "stress-ng missing and can't be installed"
	stress-ng --cpu "$hog" --quiet &
	hog_pid=$!
	trap 'kill $hog_pid 2>/dev/null' EXIT
	say "stress-ng --cpu $hog beside every run"
fi
value() { awk -v k="$1" '$1 == k { print $2 }' "$2/recording.txt" 2>/dev/null; }
pct() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", 100 * a / b; else printf "-" }'; }

# The one-VM figures of OUT: guest samples, unknown, chained%, leaf%
# workload/ping/pong, PNG KiB.
one_vm() {
	local counts samples
	counts=$(python3 "$TOP/demo/checks.py" counts "$1/perf-kvm-script.txt" 2>/dev/null)
	samples=$(awk '$1 == "samples" { print $2 }' <<<"$counts")
	printf '%8s %7s %8s %14s %6s' "${samples:--}" "$(awk '$1 == "unknown_thread" { print $2 }' <<<"$counts")" \
		"$(pct "$(awk '$1 == "chained" { print $2 }' <<<"$counts")" "$samples")" \
		"$(for p in workload ping pong; do pct "$(awk -v p=$p '$1 == p { print $2 }' "$1/programs.txt" 2>/dev/null)" "$samples"; echo; done | paste -sd/)" \
		"$(($(stat -c %s "$1/flamegraph.png" 2>/dev/null || echo 0) / 1024))"
}
# The two-VM figures: each VM's share of the guest samples (stock/off),
# demo-stock's hot leaves' share of its samples, demo-off's IPs resolved.
two_vms() {
	local stock off
	stock=$(awk '$1 == "demo-stock" { print $4 }' "$1/vms" 2>/dev/null)
	off=$(awk '$1 == "demo-off" { print $4 }' "$1/vms" 2>/dev/null)
	# vms-check.txt: PID samples chained leaf leaf_main others unknown resolved ...
	awk -v s="${stock:-x}" -v o="${off:-x}" '
		{ n[$1] = $2; leaf[$1] = $4; res[$1] = $8; all += $2 }
		function p(a, b) { return b > 0 ? sprintf("%.1f", 100 * a / b) : "-" }
		END { printf "%8d %7s/%-6s %8s %8s", all, p(n[s], all), p(n[o], all), p(leaf[s], n[s]), p(res[o], n[o]) }' \
		"$1/vms-check.txt" 2>/dev/null || printf '%8s' -
}
if [ "$guests" = 1 ]; then
	columns=$(printf '%8s %7s %8s %14s %6s' guest unknown chained% leaf%w/pi/po pngKiB)
else
	columns=$(printf '%8s %14s %8s %8s' guest share%st/off leaf%st resolv%off)
fi
printf '%-4s %-6s %5s %8s %7s %5s %s\n' run result secs samples asked% lost% "$columns" | tee "$dir/table.txt"
failed=0
for run in $(seq "$runs"); do
	out=$dir/$run
	start=$(date +%s)
	if [ "$guests" = 1 ]; then
		check=demo/check-output.sh
	else
		check=demo/check-vms.sh
	fi
	if DEMO_SECONDS=8 DEMO_GUESTS=$guests bash "$TOP/demo/run.sh" "$out" >"$dir/$run.log" 2>&1 &&
		bash "$TOP/$check" "$out" >"$dir/$run.check" 2>&1; then
		result=ok
	else
		result=FAILED
		failed=$((failed + 1))
	fi
	asked=$(($(value rate "$out") * $(value seconds "$out") *
		$(awk '$1 == "cpus" || $1 == "vcpus" { print $2 }' "$out/recording.txt" 2>/dev/null | sort -n | head -n 1)))
	if [ "$guests" = 1 ]; then figures=$(one_vm "$out"); else figures=$(two_vms "$out"); fi
	printf '%-4s %-6s %5s %8s %7s %5s %s\n' "$run" "$result" $(($(date +%s) - start)) \
		"$(value samples "$out")" "$(pct "$(value samples "$out")" "$asked")" \
		"$(value lost_percent "$out")" "$figures" | tee -a "$dir/table.txt"
done
echo "$((runs - failed)) passed, $failed failed"
[ $failed -eq 0 ]
