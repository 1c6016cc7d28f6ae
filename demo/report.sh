#!/bin/bash
# The symbolising and drawing part of 'make demo', on the machine that ran
# L1: turn OUTDIR/perf.data (recorded by demo/in-l1.sh) into
#   perf-kvm-script.txt  'perf kvm --guest script'
#   folded.txt           folded stacks ('script report stackcollapse')
#   flamegraph.html      'script report flamegraph', d3-flame-graph 4.1.3
#   flamegraph.png       that page in headless Chromium (flamegraph.labels:
#                        the names it shows)
#   top-stacks.txt       the ten hottest guest stacks
# with the guest's kernel symbols from OUTDIR/guestmount, and its user
# space symbols from, for the stock guest, the guest's sideband put into
# perf.data by perf inject --guest-data (perf.data.guest) and its build-id
# cache (OUTDIR/guest-data), or, for the fp guest, OUTDIR/guest/workload.maps.
#
#   demo/report.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
outdir=$(cd "$1" && pwd)
# perf's report scripts (stackcollapse, flamegraph) from the source tree
export PERF_EXEC_PATH=${PERF_EXEC_PATH:-$TREE/tools/perf}
template=$FLAMEGRAPH_TEMPLATE
step() { printf '[demo %4ds] %s\n' "$SECONDS" "$*"; }
warn() { printf '[demo] warning: %s\n' "$*" >&2; }

[ -s "$outdir/perf.data" ] || die "no perf.data in $outdir"
[ -f "$template" ] || die "no flame-graph template at $template: run demo/deps.sh"

# What the guest shared: a missing piece leaves those frames as addresses.
opts=(--guest)
root=$(ls -d "$outdir"/guestmount/[0-9]* 2>/dev/null | head -n 1 || true)
if [ -n "$root" ] && [ -d "$root/" ]; then
	opts+=(--guestmount="$outdir/guestmount")
	[ -s "$root/proc/kallsyms" ] ||
		warn "no guest kernel symbols ($root/proc/kallsyms): guest kernel frames are shown as addresses"
	[ "$(cat "$outdir/demo-guest" 2>/dev/null)" != fp ] || [ -s "$root/bin/workload" ] ||
		warn "no guest program ($root/bin/workload): guest user frames are shown as addresses"
else
	warn "no guest root under $outdir/guestmount: guest kernel frames are shown as addresses"
fi
# Debian's stock kernel unwinds with ORC: its tables are in its vmlinuz.
if [ "$(cat "$outdir/demo-guest" 2>/dev/null)" = stock ]; then
	if [ -s "$STOCK_KERNEL/vmlinuz" ]; then
		opts+=(--guestimage="$STOCK_KERNEL/vmlinuz")
	else
		warn "no guest kernel image ($STOCK_KERNEL/vmlinuz): guest kernel stacks are not unwound"
	fi
fi
# perf's build-id cache is $HOME/.debug, for the perf that report scripts
# start too: the guest's, for its programs.
home=$HOME
input=perf.data
cd "$outdir"
if [ -s guest-data/tmp/guest.data ] && [ -s guest-clock ] && [ -s guest-qemu.pid ]; then
	home=$outdir/guest-data/root
	step "adding the guest's sideband: perf inject --guest-data=guest.data,$(cat guest-qemu.pid),$(cat guest-clock)"
	HOME=$home "$PERF" inject -i perf.data -o perf.data.guest \
		--guest-data="guest-data/tmp/guest.data,$(cat guest-qemu.pid),$(cat guest-clock)" \
		>perf-inject.log 2>&1 || die "perf inject --guest-data failed: $(tail -n 5 perf-inject.log)"
	input=perf.data.guest
elif [ -s "$outdir/guest/workload.maps" ]; then
	opts+=(--guestmaps="$outdir/guest/workload.maps")
else
	warn "no guest sideband ($outdir/guest-data) nor program mappings ($outdir/guest/workload.maps): guest user frames are shown as addresses"
fi

step "symbolising: perf kvm ${opts[*]//"$outdir\/"/} -i $input script"
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script >perf-kvm-script.txt 2>perf-kvm-script.err ||
	die "perf kvm script failed: $(tail -n 5 perf-kvm-script.err)"
step "folding stacks: perf kvm script report stackcollapse"
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script report stackcollapse >folded.txt 2>>perf-kvm-script.err ||
	die "perf kvm script report stackcollapse failed: $(tail -n 5 perf-kvm-script.err)"
[ -s folded.txt ] || die "no guest stacks in $outdir/$input"

step "drawing: perf kvm script report flamegraph (d3-flame-graph 4.1.3)"
rm -f flamegraph.html
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script report flamegraph --template "$template" \
	-o flamegraph.html >>perf-kvm-script.err 2>&1 </dev/null || true
[ -s flamegraph.html ] || die "perf script report flamegraph wrote no HTML: $(tail -n 5 perf-kvm-script.err)"

step "taking a picture of the flame graph in headless Chromium"
command -v chromium >/dev/null || die "chromium missing: run 'make deps'"
NODE_PATH=$NPMDIR/node_modules timeout 120 node "$TOP/demo/render.js" \
	flamegraph.html flamegraph.png flamegraph.labels >render.log 2>&1 ||
	die "could not render the flame graph in Chromium: $(tail -n 5 render.log)"

# folded.txt: "comm;outermost;...;innermost COUNT"
awk '{ print $NF "\t" $0 }' folded.txt | sort -t "$(printf '\t')" -k1,1nr |
	awk -F '\t' -v total="$(awk '{ n += $NF } END { print n }' folded.txt)" 'NR <= 10 {
		stack = $2; sub(/ [0-9]+$/, "", stack)
		comm = stack; sub(/;.*/, "", comm); sub(/^[^;]*;/, "", stack)
		gsub(/;/, " -> ", stack)
		printf "%6d %5.1f%%  %s: %s\n", $1, 100 * $1 / total, comm, stack }' >top-stacks.txt
echo
echo "The ten hottest guest stacks (samples, share, guest process: caller -> callee):"
cat top-stacks.txt
echo
echo "Files in $outdir:"
files=(perf.data)
[ "$input" = perf.data ] || files+=("$input")
for f in "${files[@]}" perf-kvm-script.txt folded.txt flamegraph.html flamegraph.png top-stacks.txt; do
	printf '  %-20s %s\n' "$f" "$(du -h "$f" | cut -f1)"
done
