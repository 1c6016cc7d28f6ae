#!/bin/bash
# The short demo of 'make check', RUNS times in a row, each checked
# (demo/check-output.sh), with a table of what each recording lost:
#
#   demo/soak.sh [RUNS] [HOG]     ('make demo-soak RUNS=10 HOG=4')
#
# HOG=N runs 'stress-ng --cpu N' beside every run: the demo on a busy
# machine.  Outputs in $OUT/demo-soak/RUN; the table in
# $OUT/demo-soak/table.txt.  Exit status 1 if any run failed.
set -uo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

runs=${1:-10} hog=${2:-0}
case "$runs$hog" in
*[!0-9]*) die "usage: $0 [RUNS] [HOG]" ;;
esac
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
printf '%-4s %-6s %6s %6s %8s %6s %7s %8s %9s %8s\n' run result secs rate samples lost lost% attempts sideband unknown |
	tee "$dir/table.txt"
failed=0
for run in $(seq "$runs"); do
	out=$dir/$run
	start=$(date +%s)
	if DEMO_SECONDS=8 bash "$TOP/demo/run.sh" "$out" >"$dir/$run.log" 2>&1 &&
		bash "$TOP/demo/check-output.sh" "$out" >"$dir/$run.check" 2>&1; then
		result=ok
	else
		result=FAILED
		failed=$((failed + 1))
	fi
	unknown=$(python3 "$TOP/demo/checks.py" counts "$out/perf-kvm-script.txt" 2>/dev/null |
		awk '$1 == "samples" { s = $2 } $1 == "unknown_thread" { u = $2 } END { if (s != "") printf "%d/%d", u, s }')
	printf '%-4s %-6s %6s %6s %8s %6s %7s %8s %9s %8s\n' "$run" "$result" $(($(date +%s) - start)) \
		"$(value rate "$out")" "$(value samples "$out")" "$(value lost "$out")" \
		"$(value lost_percent "$out")" "$(value attempts "$out")" "$(value sideband_lost "$out")" \
		"${unknown:--}" | tee -a "$dir/table.txt"
done
echo "$((runs - failed)) passed, $failed failed"
[ $failed -eq 0 ]
