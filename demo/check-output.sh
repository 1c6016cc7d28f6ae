#!/bin/bash
# Check what 'make demo' wrote to OUTDIR: guest samples, at least 90% of them
# with a guest call chain, known guest kernel and user call paths in
# caller -> callee order in the folded stacks, and a flame graph that
# renders in headless Chromium with those names visible.
#
#   demo/check-output.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
outdir=$1
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }

for f in perf.data perf-kvm-script.txt folded.txt flamegraph.html flamegraph.png flamegraph.labels \
	top-stacks.txt; do
	[ -s "$outdir/$f" ] || bad "no $f in $outdir"
done
[ $fail -eq 0 ] || exit 1

# perf kvm --guest script: a header line per sample, then a line per frame.
read -r samples chained < <(awk '
	/^[^\t]/ { if (n) { s++; if (n > 1) c++ } n = 0; head = 1; next }
	/^\t/ { n++ }
	END { if (n) { s++; if (n > 1) c++ } print s + 0, c + 0 }' "$outdir/perf-kvm-script.txt")
if [ "$samples" -ge 100 ]; then
	ok "$samples guest samples"
else
	bad "only $samples guest samples"
fi
if [ $((chained * 100)) -ge $((samples * 90)) ] && [ "$samples" -gt 0 ]; then
	ok "$chained of $samples guest samples ($((chained * 100 / samples))%) have guest frames beyond the IP"
else
	bad "only $chained of $samples guest samples have guest frames beyond the IP (need 90%)"
fi

# Caller -> callee, as folded stacks go.
for path in \
	'entry_SYSCALL_64_after_hwframe;do_syscall_64;x64_sys_call;__x64_sys_(write|read);ksys_(write|read);vfs_(write|read);pipe_(write|read)' \
	'asm_exc_page_fault;exc_page_fault;handle_mm_fault' \
	';main;run_workload;compute_phase;checksum_block' ; do
	if grep -Eq "$path" "$outdir/folded.txt"; then
		ok "folded stacks have $path"
	else
		bad "no $path in the folded stacks"
	fi
done

# The page as Chromium rendered it (demo/render.js, from demo/report.sh):
# d3-flame-graph shows a frame's name in its label only when the frame is
# wide enough to read.
for name in entry_SYSCALL_64_after_hwframe do_syscall_64 asm_exc_page_fault exc_page_fault \
	main run_workload compute_phase; do
	if grep -qxF "$name" "$outdir/flamegraph.labels" 2>/dev/null; then
		ok "the rendered flame graph shows $name"
	else
		bad "the rendered flame graph does not show $name"
	fi
done
if [ "$(head -c 8 "$outdir/flamegraph.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
	[ "$(stat -c %s "$outdir/flamegraph.png")" -gt 20000 ]; then
	ok "flamegraph.png is a picture ($(stat -c %s "$outdir/flamegraph.png") bytes)"
else
	bad "flamegraph.png is not a picture of the flame graph"
fi
exit $fail
