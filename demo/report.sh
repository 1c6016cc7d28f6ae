#!/bin/bash
# The symbolising and drawing part of 'make demo', on the machine that ran
# L1: turn OUTDIR/perf.data (recorded by demo/in-l1.sh) into
#   perf-kvm-script.txt  'perf kvm --guest script'
#   folded.txt           folded stacks ('script report stackcollapse')
#   folded-vm.txt        the same, each under its VM (--include-vm)
#   flamegraph.html      'script report flamegraph', d3-flame-graph 4.1.3
#   flamegraph.png       that page in headless Chromium (flamegraph.labels:
#                        the names it shows)
#   top-stacks.txt       the ten hottest guest stacks, with their VM
# and, for one VM, recorded with its host side (perf kvm --host --guest),
# the whole vCPU thread: each guest sample under its vCPU thread's host
# frames, beside that thread's host samples:
#   perf-kvm-vcpu-script.txt  'perf kvm --host --guest script'
#   folded-vcpu.txt      its folded stacks, each under its VM
#   flamegraph-vcpu.html, flamegraph-vcpu.png, flamegraph-vcpu.labels
#   gecko-vcpu.json      'script report gecko', for the Firefox Profiler
#   report-vcpu_thread.txt, report-comm.txt  'report --children --sort
#                        vcpu_thread,dso,sym' (and comm,dso,sym)
# with the guest's kernel symbols from OUTDIR/guestmount, and its user
# space symbols from, for the stock guest, the guest's sideband put into
# perf.data by perf inject --guest-data (perf.data.guest) and its build-id
# cache (OUTDIR/guest-data), for the bare guest (DEMO_AGENTLESS=1) the
# host's reads of guest memory (OUTDIR/agentless: perf kvm tasks -o's
# sideband and build-id cache; its guestmount, which OUTDIR/guestmount
# links to), or, for the fp guest, OUTDIR/guest/workload.maps;
# with several VMs (OUTDIR/vms), each VM's, from OUTDIR/NAME.
#
#   demo/report.sh OUTDIR
#
# DEMO_DRAW=0 stops short of the flame graphs (HTML and pictures): the
# script output and folded stacks only, which make check-host checks.
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
draw=${DEMO_DRAW:-1}
[ "$draw" = 0 ] || [ -f "$template" ] || die "no flame-graph template at $template: run demo/deps.sh"

# One VM (its files in OUTDIR): what the guest shared; a missing piece
# leaves those frames as addresses.
one_vm() {
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
	# Debian's stock kernel unwinds with ORC: its tables are in its
	# vmlinuz, the kernel the guest booted, which perf finds by the
	# kernel's build id in the guest's /boot under --guestmount
	# (GUEST_IMAGE=FILE gives it with --guestimage instead).
	if [ "$(cat "$outdir/demo-guest" 2>/dev/null)" = stock ]; then
		[ -z "$root" ] || rm -f "$root"/boot/vmlinuz-*
		if [ -n "${GUEST_IMAGE:-}" ]; then
			opts+=(--guestimage="$GUEST_IMAGE")
		elif [ -s "$STOCK_KERNEL/vmlinuz" ] && [ -n "$root" ]; then
			mkdir -p "$root/boot"
			ln -s "$STOCK_KERNEL/vmlinuz" "$root/boot/vmlinuz-$(cat "$root/release" 2>/dev/null || echo stock)"
		else
			warn "no guest kernel image ($STOCK_KERNEL/vmlinuz): guest kernel stacks are not unwound"
		fi
	elif [ "$(cat "$outdir/demo-guest" 2>/dev/null)" = bare ]; then
		# The host's guest root has no sys/kernel/notes, so the recording
		# no build-id of the guest's kernel to find its image by: name it.
		opts+=(--guestimage="${GUEST_IMAGE:-$STOCK_KERNEL/vmlinuz}")
	fi
	# perf's build-id cache is $HOME/.debug, for the perf that report
	# scripts start too: the guest's, for its programs.  The bare guest's
	# sideband and cache are the host's reads of it (perf kvm tasks -o,
	# same clock: no offset).
	if [ "$(cat demo-guest 2>/dev/null)" = bare ] && [ -s agentless/guest.data ] && [ -s guest-qemu.pid ]; then
		home=$outdir/agentless/home
		step "adding the host's reads of the guest: perf inject --guest-data=agentless/guest.data,$(cat guest-qemu.pid)"
		HOME=$home "$PERF" inject -i perf.data -o perf.data.guest \
			--guest-data="agentless/guest.data,$(cat guest-qemu.pid)" \
			>perf-inject.log 2>&1 || die "perf inject --guest-data failed: $(tail -n 5 perf-inject.log)"
		input=perf.data.guest
	elif [ -s guest-data/tmp/guest.data ] && [ -s guest-clock ] && [ -s guest-qemu.pid ]; then
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
}

# Several VMs (OUTDIR/vms, a line per VM: NAME GUEST LEVEL QEMU-PID, its
# files in OUTDIR/NAME): every VM's root under guestmount; each stock
# guest's sideband injected, one perf inject per VM, and its build-id
# cache; the fp guests' program mappings (--guestmaps, for the VMs that
# have no sideband).
several_vms() {
	local name kind pid maps='' from
	opts+=(--guestmount="$outdir/guestmount")
	home=$outdir/guests-home
	rm -rf "$home" perf.data.guest perf.data.demo-*
	mkdir -p "$home/.debug"
	: >perf-inject.log
	while read -r name kind _ pid _; do
		[ -s "guestmount/$pid/proc/kallsyms" ] ||
			warn "no kernel symbols of $name (guestmount/$pid/proc/kallsyms): its guest kernel frames are shown as addresses"
		case "$kind" in
		stock)
			if [ -s "$name/guest-data/tmp/guest.data" ] && [ -s "$name/guest-clock" ]; then
				cp -a "$name/guest-data/root/.debug/." "$home/.debug/" 2>/dev/null || true
				from=$input input=perf.data.$name
				step "adding $name's sideband: perf inject --guest-data=$name/guest.data,$pid,$(cat "$name/guest-clock")"
				HOME=$home "$PERF" inject -i "$from" -o "$input" \
					--guest-data="$name/guest-data/tmp/guest.data,$pid,$(cat "$name/guest-clock")" \
					>>perf-inject.log 2>&1 || die "perf inject --guest-data of $name failed: $(tail -n 5 perf-inject.log)"
			else
				warn "no sideband of $name ($name/guest-data, $name/guest-clock): its guest user frames are shown as addresses"
			fi
			;;
		fp)
			[ -n "$maps" ] || [ ! -s "$name/guest/workload.maps" ] || maps=$outdir/$name/guest/workload.maps
			;;
		esac
	done <vms
	# Debian's stock kernel unwinds with ORC: its tables are in its
	# vmlinuz, which perf finds by the kernel's build id in the build-id
	# cache, once added there (beside the kallsyms the guests cached).
	if grep -q '^[^ ]* stock ' vms; then
		if [ -n "${GUEST_IMAGE:-}" ]; then
			opts+=(--guestimage="$GUEST_IMAGE")
		elif [ -s "$STOCK_KERNEL/vmlinuz" ]; then
			step "adding the guests' kernel image to their build-id cache: perf buildid-cache --add vmlinuz"
			HOME=$home "$PERF" buildid-cache --add "$STOCK_KERNEL/vmlinuz" >>perf-inject.log 2>&1 ||
				die "perf buildid-cache --add $STOCK_KERNEL/vmlinuz failed: $(tail -n 5 perf-inject.log)"
		else
			warn "no guest kernel image ($STOCK_KERNEL/vmlinuz): guest kernel stacks are not unwound"
		fi
	fi
	[ -z "$maps" ] || opts+=(--guestmaps="$maps")
	if [ "$input" != perf.data ]; then
		mv "$input" perf.data.guest
		input=perf.data.guest
	fi
	rm -f perf.data.demo-*
}

opts=(--guest)
home=$HOME
input=perf.data
fields=()
cd "$outdir"
several=0
if [ "$(wc -l 2>/dev/null <vms || echo 0)" -gt 1 ]; then
	several=1
	several_vms
	# Each sample's VM (demo/check-vms.sh): "VM: PID VCPU: N" once its
	# VM's sideband placed it on a guest thread, else its vCPU thread's
	# PID.
	fields=(-F +pid,+machine_pid,+vcpu)
else
	one_vm
fi

step "symbolising: perf kvm ${opts[*]//"$outdir\/"/} -i $input script ${fields[*]}"
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script "${fields[@]}" >perf-kvm-script.txt 2>perf-kvm-script.err ||
	die "perf kvm script failed: $(tail -n 5 perf-kvm-script.err)"
step "folding stacks: perf kvm script report stackcollapse"
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script report stackcollapse >folded.txt 2>>perf-kvm-script.err ||
	die "perf kvm script report stackcollapse failed: $(tail -n 5 perf-kvm-script.err)"
[ -s folded.txt ] || die "no guest stacks in $outdir/$input"
HOME=$home "$PERF" kvm "${opts[@]}" -i $input script report stackcollapse -- --include-vm \
	>folded-vm.txt 2>>perf-kvm-script.err ||
	die "perf kvm script report stackcollapse -- --include-vm failed: $(tail -n 5 perf-kvm-script.err)"

rm -f flamegraph.html flamegraph.png flamegraph-vcpu.html flamegraph-vcpu.png
if [ "$draw" != 0 ]; then
	step "drawing: perf kvm script report flamegraph --include-vm (d3-flame-graph 4.1.3)"
	HOME=$home "$PERF" kvm "${opts[@]}" -i $input script report flamegraph -- --include-vm \
		--template "$template" -o flamegraph.html >>perf-kvm-script.err 2>&1 </dev/null || true
	[ -s flamegraph.html ] || die "perf script report flamegraph wrote no HTML: $(tail -n 5 perf-kvm-script.err)"
fi

# A picture of flame graph NAME.html: NAME.png, and NAME.labels, the names
# it shows.
render() {
	command -v chromium >/dev/null || die "chromium missing: run 'make deps'"
	NODE_PATH=$NPMDIR/node_modules timeout 120 node "$TOP/demo/render.js" \
		"$1.html" "$1.png" "$1.labels" >render.log 2>&1 ||
		die "could not render $1.html in Chromium: $(tail -n 5 render.log)"
}

if [ "$draw" != 0 ]; then
	step "taking a picture of the flame graph in headless Chromium"
	render flamegraph
fi

# One VM recorded with its host side: the whole vCPU thread, host and
# guest, where the VM and its QEMU are the host's (--host), with L1's
# kernel symbols (host-kallsyms): perf would take this machine's for them.
if [ "$several" = 0 ] && [ "$(cat machines 2>/dev/null)" = "--host --guest" ]; then
	step "the whole vCPU thread: perf kvm --host ${opts[*]//"$outdir\/"/} -i $input script"
	HOME=$home "$PERF" kvm --host "${opts[@]}" -i $input script --kallsyms=host-kallsyms \
		-F +machine_pid,+vcpu \
		>perf-kvm-vcpu-script.txt 2>perf-kvm-vcpu.err ||
		die "perf kvm --host --guest script failed: $(tail -n 5 perf-kvm-vcpu.err)"
	HOME=$home "$PERF" kvm --host "${opts[@]}" -i $input script --kallsyms=host-kallsyms \
		report stackcollapse -- --include-vm >folded-vcpu.txt 2>>perf-kvm-vcpu.err ||
		die "perf kvm --host --guest script report stackcollapse failed: $(tail -n 5 perf-kvm-vcpu.err)"
	step "the whole vCPU thread for the Firefox Profiler: script report gecko --save-only gecko-vcpu.json"
	rm -f gecko-vcpu.json
	HOME=$home "$PERF" kvm --host "${opts[@]}" -i $input script --kallsyms=host-kallsyms \
		report gecko --save-only gecko-vcpu.json >>perf-kvm-vcpu.err 2>&1 </dev/null ||
		die "perf kvm --host --guest script report gecko failed: $(tail -n 5 perf-kvm-vcpu.err)"
	step "the vCPU threads in perf report: --children --sort vcpu_thread,dso,sym (and comm,dso,sym)"
	for key in vcpu_thread comm; do
		HOME=$home "$PERF" kvm --host "${opts[@]}" -i $input report --kallsyms=host-kallsyms \
			--children --sort $key,dso,sym --stdio -g none -t ';' \
			>report-$key.txt 2>>perf-kvm-vcpu.err </dev/null ||
			die "perf kvm --host --guest report --sort $key failed: $(tail -n 5 perf-kvm-vcpu.err)"
	done
	if [ "$draw" != 0 ]; then
		HOME=$home "$PERF" kvm --host "${opts[@]}" -i $input script --kallsyms=host-kallsyms \
			report flamegraph -- --include-vm --template "$template" -o flamegraph-vcpu.html >>perf-kvm-vcpu.err 2>&1 </dev/null || true
		[ -s flamegraph-vcpu.html ] ||
			die "perf script report flamegraph wrote no HTML of the vCPU thread: $(tail -n 5 perf-kvm-vcpu.err)"
		render flamegraph-vcpu
	fi
fi

# folded-vm.txt: "VM;comm;outermost;...;innermost COUNT"
awk '{ print $NF "\t" $0 }' folded-vm.txt | sort -t "$(printf '\t')" -k1,1nr |
	awk -F '\t' -v total="$(awk '{ n += $NF } END { print n }' folded-vm.txt)" 'NR <= 10 {
		stack = $2; sub(/ [0-9]+$/, "", stack)
		vm = stack; sub(/;.*/, "", vm); sub(/^[^;]*;/, "", stack); sub(/_\(/, " (", vm)
		comm = stack; sub(/;.*/, "", comm); sub(/^[^;]*;/, "", stack)
		gsub(/;/, " -> ", stack)
		printf "%6d %5.1f%%  %s: %s: %s\n", $1, 100 * $1 / total, vm, comm, stack }' >top-stacks.txt
echo
echo "The ten hottest guest stacks (samples, share, VM: guest process: caller -> callee):"
cat top-stacks.txt
echo
echo "Files in $outdir:"
files=(perf.data)
[ "$input" = perf.data ] || files+=("$input")
files+=(perf-kvm-script.txt folded.txt top-stacks.txt)
[ "$draw" = 0 ] || files+=(flamegraph.html flamegraph.png)
[ ! -s folded-vcpu.txt ] || files+=(folded-vcpu.txt)
[ ! -s gecko-vcpu.json ] || files+=(gecko-vcpu.json)
[ ! -s flamegraph-vcpu.png ] || files+=(flamegraph-vcpu.html flamegraph-vcpu.png)
for f in "${files[@]}"; do
	printf '  %-20s %s\n' "$f" "$(du -h "$f" | cut -f1)"
done
