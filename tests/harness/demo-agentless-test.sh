#!/bin/bash
# The agentless check (demo/checks.py agentless, demo/demochecks/agentless.py)
# on made-up outputs of one recording: it passes when the host's reads
# place and name what the guest's sideband does, and fails when they put a
# sample on another process, name a kernel or user frame otherwise, leave a
# program's user samples on no process, are of other samples, or give a
# program's process another parent or none.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# sample COMM PID TIME FRAME...: a sample as perf kvm --guest script -F
# comm,pid,tid,time,ip,sym,dso writes it, each FRAME "ADDR SYM (DSO)".
sample() {
	local comm=$1 pid=$2 time=$3 frame
	shift 3
	printf '%s %8s/%-8s %s: \n' "$comm" "$pid" "$pid" "$time"
	for frame; do printf '\t    %s\n' "$frame"; done
	echo
}
# truth [PLACE_AS] [KERNEL_SYM]: samples of the three programs, 20 user
# samples each, and one kernel sample of workload's, on the programs'
# processes (or all on PLACE_AS's), the kernel frame named KERNEL_SYM.
script() {
	local prog pid i n=0 place=${1:-} ksym=${2:-pipe_write}
	for prog in workload:157 ping:158 pong:161; do
		pid=${prog#*:} prog=${prog%:*}
		[ -z "$place" ] || pid=$place
		for i in $(seq 20); do
			n=$((n + 1))
			sample "$prog" "$pid" "100.$(printf %06d "$n")" \
				"55a44c1611e0 ${prog}_loop (/bin/$prog)" \
				"7f878cabb249 __libc_start_call_main (/lib/x86_64-linux-gnu/libc.so.6)"
		done
	done
	sample workload "${place:-157}" 101.000000 "ffffffffa4c9a938 $ksym ([guest.kernel.kallsyms.113])" \
		"7f878cb8d2ad write (/lib/x86_64-linux-gnu/libc.so.6)"
}
# tasks [PID:PPID]: the FORK records of the programs' processes as perf
# script --show-task-events writes them, their parent 1 (PID's PPID).
tasks() {
	local pid ppid other=${1:-}
	for pid in 157 158 161; do
		ppid=1
		[ "${other%%:*}" != "$pid" ] || ppid=${other#*:}
		printf '            init %6d [000]     0.000000: PERF_RECORD_FORK(%d:%d):(%d:%d)\n' \
			1 "$pid" "$pid" "$ppid" "$ppid"
	done
}
# check NAME WANT: the check of truth-script.txt against perf-kvm-script.txt
# in $tmp/NAME exits WANT (0 passes, 1 fails).
check() {
	local rc=0
	python3 "$TOP/demo/checks.py" agentless "$tmp/$1" >"$tmp/$1.out" 2>&1 || rc=$?
	if [ "$rc" -eq "$2" ]; then
		echo "ok: $1: exit status $rc"
	else
		echo "FAILED: $1: exit status $rc, not $2"
		sed 's/^/    /' "$tmp/$1.out"
		fail=1
	fi
}
# case NAME WANT HOST_SCRIPT_ARGS...: the host's output from script ARGS,
# its FORK records from $host_tasks ("tasks" unless set).
case_of() {
	local name=$1 want=$2
	shift 2
	mkdir -p "$tmp/$name/agentless"
	script >"$tmp/$name/agentless/truth-script.txt"
	"$@" >"$tmp/$name/agentless/perf-kvm-script.txt"
	tasks >"$tmp/$name/agentless/truth-tasks.txt"
	${host_tasks:-tasks} >"$tmp/$name/agentless/tasks.txt"
	check "$name" "$want"
}
fail=0
case_of same 0 script
case_of other-process 1 script 999
case_of unknown-thread 1 sh -c "$(declare -f sample script); script -1 | sed 's/^[a-z]* /[unknown guest thread] /'"
case_of kernel-symbol 1 script "" pipe_read
case_of user-symbol 1 sh -c "$(declare -f sample script); script | sed 's/workload_loop/other_loop/'"
case_of fewer-samples 1 sh -c "$(declare -f sample script); script | head -n 20"
case_of no-samples 1 true
host_tasks="tasks 158:1234" case_of other-parent 1 script
no_fork() { tasks | grep -v "(161:"; }
host_tasks=no_fork case_of no-fork 1 script
exit $fail
