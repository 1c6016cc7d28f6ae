#!/bin/bash
# A host's recording of several VMs given the wrong sidebands, from what
# 'make demo DEMO_GUESTS=2|3' wrote (OUTDIR/vms: NAME GUEST LEVEL QEMU-PID,
# each stock VM's sideband in OUTDIR/NAME): the flame graph is still
# drawn, and perf names each VM whose sideband does not fit it:
#   - the two stock VMs' sidebands swapped: each VM's user space samples
#     fall outside the mappings of the threads the other VM's sideband
#     names (its programs are mapped elsewhere), so they are the unknown
#     guest thread's, shown as addresses, or, on a vCPU the other guest
#     did not have, have no sideband at all; perf says which VM, and what
#     to check;
#   - a VM's sideband left out: perf says that VM's samples have no guest
#     processes.
#
#   tests/demo/vms-bad-sideband-test.sh OUTDIR
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
demo=$1

mapfile -t stock < <(awk '$2 == "stock" { print $1 " " $4 }' "$demo/vms" 2>/dev/null)
[ ${#stock[@]} -ge 2 ] || die "$demo/vms names fewer than two stock VMs: run make demo DEMO_GUESTS=2 first"
read -r a pid_a <<<"${stock[0]}"
read -r b pid_b <<<"${stock[1]}"

# copy NAME: the demo's recording, its VMs' files as they are.
copy() {
	mkdir "$tmp/$1"
	cp -a "$demo/perf.data" "$demo/vms" "$demo/guestmount" "$tmp/$1/"
	while read -r name _; do
		cp -a "$demo/$name" "$tmp/$1/"
	done <"$demo/vms"
}

# report NAME CASE NOTE...: report.sh draws the flame graph, and perf says
# each NOTE (a line of perf-kvm-script.err).
report() {
	local dir=$tmp/$1 what=$2 note
	shift 2
	if ! bash "$TOP/demo/report.sh" "$dir" >"$dir/report.out" 2>&1 || [ ! -s "$dir/flamegraph.html" ]; then
		echo "FAILED: $what: no flame graph:"
		tail -n 5 "$dir/report.out" | sed 's/^/    | /'
		fail=1
		return
	fi
	for note in "$@"; do
		if grep -Eq "$note" "$dir/perf-kvm-script.err"; then
			echo "ok: $what: perf says: $(grep -Em1 "$note" "$dir/perf-kvm-script.err")"
		else
			echo "FAILED: $what: perf did not say '$note':"
			grep -v '^  *-' "$dir/perf-kvm-script.err" | sort -u | head -n 5 | sed 's/^/    | /'
			fail=1
		fi
	done
}

copy swapped
for f in guest-data guest-clock; do
	mv "$tmp/swapped/$a/$f" "$tmp/swapped/$f"
	mv "$tmp/swapped/$b/$f" "$tmp/swapped/$a/$f"
	mv "$tmp/swapped/$f" "$tmp/swapped/$b/$f"
done
# Either note says the sideband does not fit: samples on a vCPU the other
# guest's sideband has (its guest had as many vCPUs) are on no thread of
# it, among all its samples or, where most are kernel samples, which the
# other sideband places on whatever thread ran, among its user space
# samples; samples on a vCPU it lacks (demo-stock has two vCPUs, demo-off
# one) have no sideband at all.  Which a VM gets depends on the vCPUs its
# programs ran on.
misfit="([0-9]+ of [0-9]+ guest (user space )?samples on no thread of its guest sideband|[0-9]+ guest samples and no guest sideband)"
report swapped "the sidebands of $a and $b swapped" "^$a \($pid_a\): $misfit" "^$b \($pid_b\): $misfit"

copy missing
rm -rf "$tmp/missing/$b/guest-data"
report missing "$b's sideband missing" "^$b \($pid_b\): [0-9]+ guest samples and no guest sideband"
grep -q "warning: no sideband of $b" "$tmp/missing/report.out" ||
	{ echo "FAILED: $b's sideband missing: report.sh did not warn"; fail=1; }

exit $fail
