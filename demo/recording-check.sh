#!/bin/bash
# Whether a finished demo's recording is a good one, before anything is
# judged or reused from it (demo/check-output.sh, demo/bad-use-test.sh):
#   - recording.txt (demo/in-l1.sh) says what perf recorded and lost: at
#     most DEMO_MAX_LOST_PERCENT (1) of the samples lost, and nothing of
#     the stock guest's sideband;
#   - perf kvm script shows at least 100 guest samples;
#   - for the stock guest, at most 25% of them are the unknown guest
#     thread's (the sideband's clock and switches placed the rest).  A
#     sample within the guest clock's error of a guest context switch is
#     the unknown thread's by design: ping and pong switch every 40 ms,
#     and on a busy machine the error grows to +-2.5 ms, which made 6% of
#     the samples unknown; a clock that is off, or a sideband that ends
#     early, makes most of them unknown.
#
#   demo/recording-check.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
outdir=$1
max_lost=${DEMO_MAX_LOST_PERCENT:-1}
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }

# value KEY: KEY's value in recording.txt, empty if none.
value() { awk -v k="$1" '$1 == k { print $2 }' "$outdir/recording.txt" 2>/dev/null; }

if [ ! -s "$outdir/recording.txt" ]; then
	bad "no recording.txt in $outdir: the recording did not finish"
	exit 1
fi
samples=$(value samples) lost=$(value lost) percent=$(value lost_percent)
if [ -z "$samples" ] || [ -z "$lost" ] || [ -z "$percent" ]; then
	bad "recording.txt in $outdir does not say how many samples were recorded and lost"
	exit 1
fi
if awk -v p="$percent" -v m="$max_lost" 'BEGIN { exit !(p <= m) }'; then
	ok "the recording lost $lost of $((samples + lost)) samples ($percent%; at most $max_lost%), at $(value rate) a second in $(value took)s for $(value seconds)s, attempt $(value attempts)"
else
	bad "the recording lost $lost of $((samples + lost)) samples ($percent%, more than $max_lost%)"
fi
# One VM: OUTDIR/demo-guest names its guest; several: OUTDIR/vms, a line
# per VM (demo/check-vms.sh judges the unknown guest thread per VM).
stock=0 sideband=0
[ "$(cat "$outdir/demo-guest" 2>/dev/null)" = stock ] && stock=1 sideband=1
awk '$2 == "stock" { found = 1 } END { exit !found }' "$outdir/vms" 2>/dev/null && sideband=1
if [ $sideband = 1 ]; then
	sideband=$(value sideband_lost)
	if [ "$sideband" = 0 ]; then
		ok "the guest's sideband lost no events"
	else
		bad "the guest's sideband lost events (${sideband:-unknown} PERF_RECORD_LOST records)"
	fi
fi

if [ -s "$outdir/perf-kvm-script.txt" ]; then
	# perf kvm --guest script: a header line per sample (its comm first),
	# then a line per frame.
	read -r shown unknown < <(awk '/^[^\t]/ { s++; if (/^\[unknown guest thread\]/) u++ }
		END { print s + 0, u + 0 }' "$outdir/perf-kvm-script.txt")
	if [ "$shown" -ge 100 ]; then
		ok "$shown guest samples in perf kvm script"
	else
		bad "only $shown guest samples in perf kvm script (need 100)"
	fi
	if [ $stock = 1 ]; then
		if [ $((unknown * 4)) -le "$shown" ]; then
			ok "$unknown of $shown guest samples are the unknown guest thread's (at most 25%)"
		else
			bad "$unknown of $shown guest samples are the unknown guest thread's (more than 25%): the sideband did not place them"
		fi
	fi
else
	bad "no perf-kvm-script.txt in $outdir"
fi
exit $fail
