#!/bin/bash
# The demo's stock guest profiled with nothing of the guest's help, against
# its own sideband on the same recording (check-host's guest/record records
# both, DEMO_AGENTLESS=both; demo/l1-record.sh's agentless_wrap): the
# host's reads of guest memory during the recording (agentless/guest.data,
# perf kvm tasks -o, its files' build-ids read in the guest's image under
# agentless/guestmount, the files in the build-id cache agentless/home)
# and its kernel symbols (perf kvm kallsyms, into that guestmount's
# proc/kallsyms) put into the recording with perf inject; then each sample
# compared with the recording symbolised with the guest's own sideband,
# its /proc/kallsyms and its build-id cache (demo/report.sh made
# perf.data.guest): demo/checks.py agentless, the issue's targets (the
# same process for 99% of each demo program's user samples, the same
# symbol for 95% of their user frames and for every guest kernel frame),
# and each program's parent the same by the two sidebands' FORK records.
#   tests/demo/agentless-test.sh DEMO_OUTDIR   (a finished demo's output)
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ $# -eq 1 ] || die "usage: $0 DEMO_OUTDIR"
demo=$(cd "$1" && pwd)
agentless=$demo/agentless
pid=$(cat "$demo/guest-qemu.pid" 2>/dev/null)
for f in agentless/guest.data guest-data/tmp/guest.data "agentless/guestmount/$pid/proc/kallsyms" perf.data perf.data.guest; do
	[ -s "$demo/$f" ] || die "no $f in $demo: record the stock guest with DEMO_AGENTLESS=both and run demo/report.sh"
done
say "perf inject --guest-data=agentless/guest.data,$pid (the host's reads, the same clock)"
HOME=$agentless/home "$PERF" inject -i "$demo/perf.data" -o "$agentless/perf.data.guest" \
	--guest-data="$agentless/guest.data,$pid" >"$agentless/perf-inject.log" 2>&1 || {
	tail -n 5 "$agentless/perf-inject.log"
	die "perf inject of the host's sideband failed"
}
fields=(-F comm,pid,tid,time,ip,sym,dso)
say "perf kvm --guest script ${fields[*]}: with the guest's sideband, and with the host's reads"
HOME=$demo/guest-data/root "$PERF" kvm --guest --guestmount="$demo/guestmount" -i "$demo/perf.data.guest" \
	script "${fields[@]}" >"$agentless/truth-script.txt" 2>"$agentless/truth-script.err" ||
	die "perf kvm script of the guest's sideband failed: $(tail -n 5 "$agentless/truth-script.err")"
HOME=$agentless/home "$PERF" kvm --guest --guestmount="$agentless/guestmount" -i "$agentless/perf.data.guest" \
	script "${fields[@]}" >"$agentless/perf-kvm-script.txt" 2>"$agentless/perf-kvm-script.err" ||
	die "perf kvm script of the host's reads failed: $(tail -n 5 "$agentless/perf-kvm-script.err")"
say "perf script --show-task-events of the two sidebands (their FORK records)"
"$PERF" script --show-task-events -i "$demo/guest-data/tmp/guest.data" >"$agentless/truth-tasks.txt" \
	2>"$agentless/truth-tasks.err" ||
	die "perf script of the guest's sideband failed: $(tail -n 5 "$agentless/truth-tasks.err")"
"$PERF" script --show-task-events -i "$agentless/guest.data" >"$agentless/tasks.txt" 2>"$agentless/tasks.err" ||
	die "perf script of the host's reads failed: $(tail -n 5 "$agentless/tasks.err")"
python3 "$TOP/demo/checks.py" agentless "$demo" || fail=1
exit $fail
