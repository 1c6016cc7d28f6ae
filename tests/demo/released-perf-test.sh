#!/bin/bash
# A released perf reading a recording whose guest samples carry the host
# part of their vCPU thread's chain (the vcpu-host kernel series' markers):
# it must never resolve a host frame in a guest machine.  The perf of the
# series' base, 7.3 as released (scripts/build-perf.sh released, built in
# the other lane), reads the demo's recording of the whole vCPU thread;
# none of a guest sample's host part, as this series' perf shows it, may
# be among the frames it shows for that sample.
#   tests/demo/released-perf-test.sh DEMO_OUTDIR   (a finished demo's output)
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ $# -eq 1 ] || die "usage: $0 DEMO_OUTDIR"
demo=$(cd "$1" && pwd)
released=$BUILD/perf-released/perf
if [ "$(cat "$demo/machines" 2>/dev/null)" != "--host --guest" ] ||
	[ ! -s "$demo/perf-kvm-vcpu-script.txt" ]; then
	die "$demo has no recording of the whole vCPU thread (perf kvm --host --guest)"
fi
# The build runs beside the demo (make check's host lane): wait for it.
for _ in $(seq 90); do
	[ -x "$released" ] && break
	sleep 10
done
[ -x "$released" ] || die "no released perf at $released: run scripts/build-perf.sh released"

input=$demo/perf.data
[ ! -s "$demo/perf.data.guest" ] || input=$demo/perf.data.guest
say "$("$released" version): perf script -i $(basename "$input")"
"$released" script -i "$input" --guestmount="$demo/guestmount" --kallsyms="$demo/host-kallsyms" \
	>"$tmp/released.txt" 2>"$tmp/released.err" || {
	tail -n 5 "$tmp/released.err"
	die "the released perf script failed on $input"
}
python3 "$TOP/demo/checks.py" released "$demo" "$tmp/released.txt" || fail=1
exit $fail
