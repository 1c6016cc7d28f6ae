#!/bin/bash
# tools/guest-clock/guest-clock-offset ping against a made-up guest: a
# UNIX socket that answers each 'c' with this machine's CLOCK_MONOTONIC
# plus 5 s, after a delay, as clock-echo does over a virtio serial port.
#   - the offset comes out at 5 s, within the half round trip it reports;
#   - on a slow guest (50 ms a round trip) the readings stop after about
#     --seconds, not after 100 round trips, before and after the command;
#   - the command's exit status is passed on; wrong use says how to use it;
#   - guest-clock-offset cpuid against a made-up guest that answers 'x'
#     with 20 readings 40 us apart around made-up CPUIDs, 5 s ahead, and a
#     made-up perf that records their VM exits at the host's time (its
#     --control protocol, its script output): the offset comes out at 5 s
#     within 20 us, whatever the 30 ms round trip; with no VM exits
#     recorded, or a perf that can't record them, it says so and fails.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'kill $guest 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
tool=$TOP/tools/guest-clock/guest-clock-offset
# refuses WHAT PATTERN COMMAND...: COMMAND fails (not by a timeout),
# saying PATTERN (grep).
refuses() {
	local what=$1 pattern=$2 rc=0
	shift 2
	"$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "$pattern" "$tmp/err"; then
		echo "ok: $what: $(cat "$tmp/err")"
	else
		echo "FAILED: $what: exit status $rc, says '$(cat "$tmp/err")'"
		fail=1
	fi
}

# The made-up guest, 5 s ahead: 'c' answered after 50 ms; 'x' answered
# after 30 ms with 20 readings 40 us apart around made-up CPUIDs, each
# written to $tmp/exits at the host's time, as perf would record KVM's
# handling of the CPUID.
python3 - "$tmp/clock.sock" "$tmp/exits" <<'PY' &
import socket, sys, time
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(1)
seq = 0
while True:
    conn, _ = srv.accept()
    while True:
        c = conn.recv(1)
        if not c or c == b'q':
            break
        if c == b'c':
            time.sleep(0.05)
            conn.sendall(b'%d\n' % (time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 5000000000))
        if c == b'x':
            time.sleep(0.03)
            lines = []
            for _ in range(20):
                seq += 1
                host = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                with open(sys.argv[2], 'a') as f:
                    f.write('%d %d\n' % (host, seq))
                lines.append(b'%d %d %d\n' % (seq, host + 5000000000 - 20000, host + 5000000000 + 20000))
            conn.sendall(b''.join(lines) + b'.\n')
    conn.close()
PY
guest=$!
for _ in $(seq 50); do [ -S "$tmp/clock.sock" ] && break; sleep 0.1; done

start=$(date +%s%N)
rc=0
python3 "$tool" ping "$tmp/clock.sock" --seconds 1 -- sh -c 'sleep 1; exit 3' \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
cat "$tmp/err"
if [ $rc -eq 3 ]; then
	echo "ok: the command's exit status (3) is passed on"
else
	echo "FAILED: exit status $rc, not the command's 3"
	fail=1
fi
# 1 s of readings before, 1 s of command, 1 s after, and a round trip of
# slack each time: 100 round trips of 50 ms each way would be 11 s.
if [ $took -lt 5000 ]; then
	echo "ok: readings bounded by --seconds on a slow guest: ${took} ms in all"
else
	echo "FAILED: ${took} ms in all: the readings are not bounded by --seconds"
	fail=1
fi
# guest = OFFSET + host * SCALE, now: 5 s ahead within the round trips.
if python3 -c '
import sys, time
offset, scale = (float(x) for x in open(sys.argv[1]).read().split(","))
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
sys.exit(not (abs(offset + now * scale - now - 5e9) < 6e7 and abs(scale - 1) < 0.01))' "$tmp/out"; then
	echo "ok: offset,scale $(cat "$tmp/out") is 5 s ahead, scale 1"
else
	echo "FAILED: offset,scale '$(cat "$tmp/out")' is not 5 s ahead with scale 1"
	fail=1
fi
if grep -q 'best of [0-9]*)' "$tmp/err"; then
	echo "ok: it says how many readings it took"
else
	echo "FAILED: no 'best of N' in what it says"
	fail=1
fi

refuses "a wrong --seconds gets the usage" '^guest-clock-offset: usage:' \
	python3 "$tool" ping "$tmp/clock.sock" --seconds soon
refuses "no guest at the socket" 'none.sock' python3 "$tool" ping "$tmp/none.sock"

# The cpuid way, with a made-up perf: perf record ... --control fifo:CTL,ACK -o DATA: ack the enable, stop at
# SIGINT with perf's status (130); perf script: the exits as kvm:kvm_cpuid
# lines.
cat >"$tmp/perf" <<'SH'
#!/bin/bash
exits=${FAKE_EXITS:?}
case "$1" in
record)
	while [ $# -gt 0 ]; do
		case "$1" in
		--control) ctl=${2#fifo:} ack=${ctl#*,} ctl=${ctl%,*}; shift ;;
		esac
		shift
	done
	# As perf does: stop at SIGINT with its own handler (a shell's trap
	# can't catch a SIGINT ignored when it started, as in make check's
	# background lanes); both fifos open O_RDWR (no SIGPIPE, no waiting
	# for the other end); "ack\n" and the string's NUL in one write.
	exec python3 - "$ctl" "$ack" <<'PY'
import os, signal, sys, time
signal.signal(signal.SIGINT, lambda *_: os._exit(130))
ctl, ack = (os.open(path, os.O_RDWR) for path in sys.argv[1:3])
if os.read(ctl, 64).startswith(b"enable"):
    os.write(ack, b"ack\n\0")
while True:
    time.sleep(0.1)
PY
	;;
script)
	[ -e "$exits" ] || exit 0
	while read -r host seq; do
		printf ' %d.%09d: func 50455246 idx %x rax 0 rbx 0 rcx 0 rdx 0, cpuid entry not found\n' \
			$((host / 1000000000)) $((host % 1000000000)) "$seq"
	done <"$exits"
	;;
esac
SH
chmod +x "$tmp/perf"
rc=0
FAKE_EXITS=$tmp/exits python3 "$tool" cpuid "$tmp/clock.sock" $$ --perf "$tmp/perf" -- sleep 1.2 \
	>"$tmp/out" 2>"$tmp/err" || rc=$?
cat "$tmp/err"
if [ $rc -eq 0 ] && python3 -c '
import sys, time
offset, scale = (float(x) for x in open(sys.argv[1]).read().split(","))
now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
sys.exit(not (abs(offset + now * scale - now - 5e9) < 2e4 and abs(scale - 1) < 1e-4))' "$tmp/out" &&
	grep -q '(+-20000 ns, 20 of 20 VM exits)' "$tmp/err"; then
	echo "ok: cpuid: offset,scale $(cat "$tmp/out") is 5 s ahead within 20 us, scale 1"
else
	echo "FAILED: cpuid: exit status $rc, offset,scale '$(cat "$tmp/out")', not 5 s ahead within 20 us"
	fail=1
fi
refuses "cpuid: no VM exits recorded" "perf recorded none of the guest's 20 CPUIDs as VM exits of $$" \
	env FAKE_EXITS="$tmp/none" python3 "$tool" cpuid "$tmp/clock.sock" $$ --perf "$tmp/perf"
refuses "cpuid: a perf that can't record" 'perf record of the VM exits did not start' \
	timeout 60 python3 "$tool" cpuid "$tmp/clock.sock" $$ --perf false
refuses "cpuid without the VMM's PID gets the usage" '^guest-clock-offset: usage: guest-clock-offset cpuid' \
	python3 "$tool" cpuid "$tmp/clock.sock"
exit $fail
