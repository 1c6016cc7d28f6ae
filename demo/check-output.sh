#!/bin/bash
# Check what 'make demo' wrote to OUTDIR: a good recording
# (demo/recording-check.sh: little lost, 100 guest samples), at least 90% of them
# with a guest call chain, at least 95% of guest kernel samples with a
# complete chain to a kernel entry point and of the samples in the
# workload's hot loop with a chain to main, known guest kernel and user call
# paths in caller -> callee order in the folded stacks, and a flame graph
# that renders in headless Chromium with those names visible.
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

# A good recording first: what it lost, how many samples it has.
bash "$TOP/demo/recording-check.sh" "$outdir" || fail=1

# perf kvm --guest script: a header line per sample, then a line per frame.
read -r samples chained < <(awk '
	/^[^\t]/ { if (n) { s++; if (n > 1) c++ } n = 0; head = 1; next }
	/^\t/ { n++ }
	END { if (n) { s++; if (n > 1) c++ } print s + 0, c + 0 }' "$outdir/perf-kvm-script.txt")
if [ $((chained * 100)) -ge $((samples * 90)) ] && [ "$samples" -gt 0 ]; then
	ok "$chained of $samples guest samples ($((chained * 100 / samples))%) have guest frames beyond the IP"
else
	bad "only $chained of $samples guest samples have guest frames beyond the IP (need 90%)"
fi

# Complete chains, from perf kvm script's frames (innermost first): a guest
# kernel sample's kernel frames must all resolve and reach a kernel entry
# point (system call, exception, interrupt, a kernel thread's start), or,
# on the interrupt stack, whose copy is all the sample has, the interrupt
# handler that switched to it (sysvec_*); a sample in the program's hot
# loop must reach main.
read -r kernel kernel_complete leaf leaf_main < <(awk '
	function flush(	i, last, unresolved) {
		if (n && addr[1] ~ /^ffff/) {
			kernel++
			for (i = 1; i <= n; i++) {
				if (addr[i] !~ /^ffff/)
					continue
				last = i
				if (sym[i] == "[unknown]")
					unresolved = 1
			}
			if (!unresolved && sym[last] ~ /^(entry_SYSCALL_64|entry_SYSCALL_64_after_hwframe|asm_(exc|sysvec|common)_[a-z_]+|ret_from_fork(_asm)?|sysvec_[a-z_]+)$/)
				complete++
		} else if (n && (sym[1] == "checksum_block" || sym[1] == "mix_word")) {
			leaf++
			for (i = 2; i <= n; i++)
				if (sym[i] == "main") {
					leaf_main++
					break
				}
		}
		n = 0
	}
	/^[^\t]/ { flush(); next }
	/^\t/ { n++; addr[n] = $1; s = $2; sub(/\+0x[0-9a-f]+$/, "", s); sym[n] = s }
	END { flush(); print kernel + 0, complete + 0, leaf + 0, leaf_main + 0 }' "$outdir/perf-kvm-script.txt")
if [ "$kernel" -gt 0 ] && [ $((kernel_complete * 100)) -ge $((kernel * 95)) ]; then
	ok "$kernel_complete of $kernel guest kernel samples ($((kernel_complete * 100 / kernel))%) have a chain that reaches a kernel entry point with every kernel frame resolved"
else
	bad "only $kernel_complete of $kernel guest kernel samples have a complete, resolved chain to a kernel entry point (need 95%)"
fi
if [ "$leaf" -gt 0 ] && [ $((leaf_main * 100)) -ge $((leaf * 95)) ]; then
	ok "$leaf_main of $leaf samples in the workload's hot loop ($((leaf_main * 100 / leaf))%) have a chain that reaches main"
else
	bad "only $leaf_main of $leaf samples in the workload's hot loop have a chain that reaches main (need 95%)"
fi

# The stock guest runs three programs, and its sideband tells them apart:
# every sample in a program's hot leaf must be that program's (by comm),
# with a chain up to its main, and no sample of one program may have a
# frame in another's file.  Samples the sideband could not place belong
# to "[unknown guest thread]"; they are counted, not checked.
if [ "$(cat "$outdir/demo-guest" 2>/dev/null)" = stock ]; then
	awk '
	function flush(	i, p, own, bad) {
		if (!n)
			return
		for (p in leafre)
			if (sym[1] ~ leafre[p]) {
				leaf[p]++
				own = comm == p
				for (i = 2; i <= n && own; i++)
					if (sym[i] == "main")
						break
				if (own && i <= n)
					good[p]++
				else if (bad_shown[p]++ < 3)
					printf "  a sample in %s'"'"'s leaf: comm %s, frames %s\n", p, comm, frames
			}
		if (comm in leafre)
			for (i = 1; i <= n; i++)
				for (p in leafre)
					if (p != comm && dso[i] ~ ("/bin/" p "$")) {
						cross[comm]++
						if (cross_shown++ < 3)
							printf "  a sample of %s with a frame in %s: %s\n", comm, p, frames
						break
					}
		if (comm == "[unknown guest thread]")
			unknown++
		total++
		n = 0
	}
	BEGIN {
		leafre["workload"] = "^(checksum_block|mix_word)$"
		leafre["ping"] = "^ping_(stroke|volley)$"
		leafre["pong"] = "^pong_(stroke|volley)$"
	}
	/^[^\t]/ { flush(); comm = $0; sub(/ +-?[0-9]+ +[0-9]+\.[0-9]+:.*$/, "", comm); sub(/^ +/, "", comm); frames = ""; next }
	/^\t/ {
		n++; s = $2; sub(/\+0x[0-9a-f]+$/, "", s); sym[n] = s
		d = $NF; gsub(/[()]/, "", d); dso[n] = d
		frames = frames " " s
	}
	END {
		flush()
		for (p in leafre)
			printf "%s %d %d %d\n", p, leaf[p] + 0, good[p] + 0, cross[p] + 0
		printf "unknown %d %d\n", unknown + 0, total + 0
	}' "$outdir/perf-kvm-script.txt" >"$outdir/programs.txt"
	grep '^  ' "$outdir/programs.txt" || true
	while read -r prog leaf good cross; do
		case "$prog" in
		' '*|'') continue ;;
		unknown)
			ok "$leaf of $good guest samples are the unknown guest thread's (before the guest's sideband knew)"
			continue ;;
		esac
		if [ "$leaf" -ge 10 ] && [ "$good" -eq "$leaf" ]; then
			ok "all $leaf samples in $prog's hot leaf are $prog's, with a chain up to its main"
		else
			bad "$good of $leaf samples in $prog's hot leaf are $prog's with a chain up to its main (need all, and 10 or more)"
		fi
		if [ "$cross" -eq 0 ]; then
			ok "no sample of $prog has a frame in another program's file"
		else
			bad "$cross samples of $prog have frames in another program's file"
		fi
	done < <(grep -v '^  ' "$outdir/programs.txt")
	for prog in workload ping pong; do
		if grep -q "^$prog;" "$outdir/folded.txt"; then
			ok "the flame graph has $prog's stacks under its own name"
		else
			bad "the flame graph has no stacks under $prog"
		fi
	done
fi

# Caller -> callee, as folded stacks go; compilers inline differently.
for path in \
	'entry_SYSCALL_64_after_hwframe;do_syscall_64;([^;]*;)*ksys_(write|read);vfs_(write|read);pipe_(write|read)' \
	'asm_exc_page_fault;exc_page_fault;([^;]*;)*handle_mm_fault' \
	';main;run_workload;compute_phase;checksum_block' \
	"$([ "$(cat "$outdir/demo-guest" 2>/dev/null)" = stock ] && echo '^ping;([^;]*;)*main;ping_rally;ping_volley' || echo ';main')"; do
	if grep -Eq "$path" "$outdir/folded.txt"; then
		ok "folded stacks have $path"
	else
		bad "no $path in the folded stacks"
	fi
done

# The page as Chromium rendered it (demo/render.js, from demo/report.sh):
# d3-flame-graph shows a frame's name in its label only when the frame is
# wide enough to read, about 35 of the page's 1600 pixels.  How much of
# the time the guest spends in page faults varies from run to run (2% to
# 10% in 8 s): a name must be shown when its frames hold 4% of the
# samples or more (64 pixels), and main and the system-call path always
# do.
share() {
	awk -v n="$1" '{ stack = $0; sub(/ [0-9]+$/, "", stack); k = split(stack, f, ";")
		for (i = 1; i <= k; i++) if (f[i] == n) { s += $NF; break }
		t += $NF }
		END { printf "%d\n", t ? 1000 * s / t : 0 }' "$outdir/folded.txt"
}
for name in entry_SYSCALL_64_after_hwframe do_syscall_64 asm_exc_page_fault exc_page_fault \
	main run_workload compute_phase; do
	permille=$(share "$name")
	if grep -qxF "$name" "$outdir/flamegraph.labels" 2>/dev/null; then
		ok "the rendered flame graph shows $name ($((permille / 10)).$((permille % 10))% of the samples)"
	elif [ "$permille" -lt 40 ] && [ "$name" != main ] && [ "$name" != do_syscall_64 ]; then
		ok "$name holds $((permille / 10)).$((permille % 10))% of the samples, too narrow a frame for its label"
	else
		bad "the rendered flame graph does not show $name ($((permille / 10)).$((permille % 10))% of the samples)"
	fi
done
# The flame graph's first level is the VM, named by its QEMU's process
# (-name process=demo-<guest>) and PID, alone.
vms=$(python3 -c '
import json, sys
html = open(sys.argv[1]).read()
root, _ = json.JSONDecoder().raw_decode(html[html.index("{\"n\": \"all\""):])
print(";".join(c["n"] for c in root["c"]))' "$outdir/flamegraph.html" 2>&1)
vm="demo-$(cat "$outdir/demo-guest" 2>/dev/null) ($(cat "$outdir/guest-qemu.pid" 2>/dev/null))"
if [ "$vms" = "$vm" ]; then
	ok "the flame graph's first level is the VM, $vm"
else
	bad "the flame graph's first level is not the VM $vm alone: $vms"
fi
if [ "$(head -c 8 "$outdir/flamegraph.png" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] &&
	[ "$(stat -c %s "$outdir/flamegraph.png")" -gt 20000 ]; then
	ok "flamegraph.png is a picture ($(stat -c %s "$outdir/flamegraph.png") bytes)"
else
	bad "flamegraph.png is not a picture of the flame graph"
fi
exit $fail
