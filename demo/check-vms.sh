#!/bin/bash
# Check what 'make demo DEMO_GUESTS=2|3' wrote to OUTDIR: several VMs
# recorded at once (OUTDIR/vms: NAME GUEST LEVEL QEMU-PID VCPUS), told apart.
#   - a good recording (demo/recording-check.sh), and samples of every VM;
#   - the VM that did not opt in: every sample has the guest's instruction
#     pointer, resolved in its own files, and no other guest frame;
#   - each opted-in VM: the samples in its programs' hot leaves reach
#     their main, under that VM and, where the VM's sideband tells its
#     processes apart, under that program;
#   - no sample has a frame resolved in another VM's files: its guest
#     kernel is its VM's ([guest.kernel.kallsyms.PID]), its files are
#     under its VM's guestmount/PID, or, for a VM with a sideband, the
#     files of that VM's build-id cache;
#   - the flame graph's first level is the VMs, each by its QEMU's process
#     name and PID, and the ten hottest stacks say which VM.
#
#   demo/check-vms.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
outdir=$1
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }

for f in vms perf.data perf-kvm-script.txt folded-vm.txt flamegraph.html top-stacks.txt; do
	[ -s "$outdir/$f" ] || bad "no $f in $outdir"
done
[ $fail -eq 0 ] || exit 1
[ "$(wc -l <"$outdir/vms")" -ge 2 ] || bad "$outdir/vms names fewer than two VMs"

bash "$TOP/demo/recording-check.sh" "$outdir" || fail=1

# Per VM, from perf kvm script (-F +pid,+machine_pid): a header line per
# sample, "VM: PID" first when the VM's sideband placed it on a guest
# thread (then PID/TID are the guest's), else the host's PID/TID of the
# vCPU thread, i.e. its QEMU's; then a line per frame, innermost first.
#   VM-PID SAMPLES CHAINED LEAF LEAF-MAIN OTHER-FILES UNKNOWN-THREAD RESOLVED
# LEAF: samples in a hot leaf of the VM's programs; LEAF-MAIN: those with
# main in their chain, under the program the leaf is in (where the
# sideband names the guest's processes); RESOLVED: samples whose first
# frame has a symbol.
awk -v vms="$outdir/vms" '
	BEGIN {
		while ((getline line < vms) > 0) {
			split(line, f, " ")
			kind[f[4]] = f[2]
			level[f[4]] = f[3]
			pids[f[4]] = 1
		}
		leafre["checksum_block"] = "workload"; leafre["mix_word"] = "workload"
		leafre["ping_stroke"] = "ping"; leafre["ping_volley"] = "ping"
		leafre["pong_stroke"] = "pong"; leafre["pong_volley"] = "pong"
	}
	function flush(	i, d, m, other) {
		if (!n)
			return
		samples[vm]++
		if (n > 1)
			chained[vm]++
		if (sym[1] != "[unknown]")
			resolved[vm]++
		if (sym[1] in leafre) {
			leaf[vm]++
			for (i = 2; i <= n; i++)
				if (sym[i] == "main")
					break
			if (i <= n && (kind[vm] != "stock" || comm == leafre[sym[1]])) {
				leaf_main[vm]++
				if (vcpu != "" && !((vm, vcpu) in seen)) {
					seen[vm, vcpu] = 1
					leaf_vcpus[vm]++
				}
			}
			else if (level[vm] > 0 && shown[vm]++ < 3)
				printf "  a sample of VM %s in %s: comm %s, frames%s\n", vm, sym[1], comm, frames
		}
		for (i = 1; i <= n; i++) {
			d = dso[i]
			other = 0
			if (match(d, /^\[guest\.kernel\.kallsyms\.[0-9]+\]$/)) {
				m = d; gsub(/[^0-9]/, "", m)
				other = m != vm
			} else if (match(d, /\/guestmount\/[0-9]+\//)) {
				m = substr(d, RSTART + 12, RLENGTH - 13)
				other = m != vm
			} else if (d ~ /^\//) {
				other = kind[vm] != "stock"
			}
			if (other) {
				others[vm]++
				if (other_shown++ < 3)
					printf "  a sample of VM %s with a frame in %s: frames%s\n", vm, d, frames
				break
			}
		}
		if (comm == "[unknown guest thread]")
			unknown[vm]++
		n = 0
	}
	/^[^\t]/ {
		flush()
		line = $0; vm = ""
		if (match(line, /^VM: *[0-9]+ /)) {
			vm = substr(line, 4, RLENGTH - 4); gsub(/ /, "", vm)
			line = substr(line, RLENGTH + 1)
		}
		vcpu = ""
		if (match(line, /^VCPU: *[0-9]+ /)) {
			vcpu = substr(line, 6, RLENGTH - 6) + 0
			line = substr(line, RLENGTH + 1)
		}
		# comm, then PID/TID, then the time
		if (!match(line, / +-?[0-9]+\/-?[0-9]+ +/)) {
			vm = "?"
			next
		}
		comm = substr(line, 1, RSTART - 1); sub(/^ +/, "", comm)
		if (vm == "") {
			vm = substr(line, RSTART, RLENGTH); sub(/^ +/, "", vm); sub(/\/.*/, "", vm)
		}
		frames = ""
		next
	}
	/^\t/ {
		n++; s = $2; sub(/\+0x[0-9a-f]+$/, "", s); sym[n] = s
		d = $NF; gsub(/^\(|\)$/, "", d); dso[n] = d
		frames = frames " " s
	}
	END {
		flush()
		for (p in samples)
			if (!(p in pids))
				printf "  %d samples of %s, which is none of the VMs\n", samples[p], p
		for (p in pids)
			printf "%s %d %d %d %d %d %d %d %d\n", p, samples[p], chained[p], leaf[p],
				leaf_main[p], others[p], unknown[p], resolved[p], leaf_vcpus[p]
	}' "$outdir/perf-kvm-script.txt" >"$outdir/vms-check.txt"
grep '^  ' "$outdir/vms-check.txt" && bad "samples of no VM, or the examples above"
while read -r name kind level pid vcpus; do
	read -r _ samples chained leaf leaf_main others unknown resolved leaf_vcpus \
		< <(grep "^$pid " "$outdir/vms-check.txt")
	vm="$name ($pid, $kind guest, level $level)"
	if [ "$samples" -lt 20 ]; then
		bad "$vm: $samples samples (need 20)"
		continue
	fi
	if [ "$level" -eq 0 ]; then
		if [ "$chained" -eq 0 ]; then
			ok "$vm: none of its $samples samples has a guest frame beyond the instruction pointer"
		else
			bad "$vm: $chained of its $samples samples have guest frames, but it did not opt in"
		fi
		# Its instruction pointers, in its own kernel and program.
		if [ $((resolved * 100)) -ge $((samples * 90)) ]; then
			ok "$vm: $resolved of its $samples instruction pointers resolved to a symbol (at least 90%)"
		else
			bad "$vm: only $resolved of its $samples instruction pointers resolved to a symbol (need 90%)"
		fi
	elif [ "$leaf" -ge 10 ] && [ $((leaf_main * 100)) -ge $((leaf * 95)) ]; then
		ok "$vm: $leaf_main of its $leaf samples in its programs' hot leaves reach main under their program"
	else
		bad "$vm: $leaf_main of its $leaf samples in its programs' hot leaves reach main under their program (need 95%, and 10 samples)"
	fi
	if [ "$others" -eq 0 ]; then
		ok "$vm: no frame of its $samples samples is in another VM's files"
	else
		bad "$vm: $others of its samples have frames in another VM's files"
	fi
	# A guest of several vCPUs: each vCPU's samples on the thread its
	# guest ran there, from its sideband's context switches.
	if [ "$kind" = stock ] && [ "$level" -gt 0 ] && [ "${vcpus:-1}" -gt 1 ]; then
		if [ "$leaf_vcpus" -eq "$vcpus" ]; then
			ok "$vm: on each of its $vcpus vCPUs, samples in its programs' hot leaves reach main under their program"
		else
			bad "$vm: samples in its programs' hot leaves reach main under their program on $leaf_vcpus of its $vcpus vCPUs"
		fi
	fi
	if [ "$kind" = stock ]; then
		if [ $((unknown * 4)) -le "$samples" ]; then
			ok "$vm: $unknown of its $samples samples are the unknown guest thread's (at most 25%)"
		else
			bad "$vm: $unknown of its $samples samples are the unknown guest thread's (more than 25%): its sideband did not place them"
		fi
	fi
done <"$outdir/vms"

# The flame graph's first level: the VMs, by QEMU process name and PID.
want=$(awk '{ printf "%s (%s)\n", $1, $4 }' "$outdir/vms" | sort | paste -sd';')
have=$(python3 -c '
import json, sys
html = open(sys.argv[1]).read()
root, _ = json.JSONDecoder().raw_decode(html[html.index("{\"n\": \"all\""):])
print(";".join(sorted(c["n"] for c in root["c"])))' "$outdir/flamegraph.html" 2>&1)
if [ "$have" = "$want" ]; then
	ok "the flame graph's first level is the VMs: $have"
else
	bad "the flame graph's first level is not the VMs ($want): $have"
fi
# The ten hottest stacks: "COUNT SHARE  VM (PID): comm: stack"
if awk -v want="$want" 'BEGIN { n = split(want, v, ";"); for (i = 1; i <= n; i++) ok[v[i]] = 1 }
	{ line = $0; sub(/^ *[0-9]+ +[0-9.]+%  /, "", line); sub(/: .*/, "", line)
	  if (!(line in ok)) exit 1; lines++ }
	END { exit !(lines == 10) }' "$outdir/top-stacks.txt"; then
	ok "each of the ten hottest stacks says its VM"
else
	bad "the ten hottest stacks do not each say their VM: $(head -n 3 "$outdir/top-stacks.txt")"
fi
exit $fail
