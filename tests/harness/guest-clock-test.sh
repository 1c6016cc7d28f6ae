#!/bin/bash
# tools/guest-clock/guest-clock-offset ping against a made-up guest: a
# UNIX socket that answers each 'c' with this machine's CLOCK_MONOTONIC
# plus 5 s, after a delay, as clock-echo does over a virtio serial port.
#   - the offset comes out at 5 s, within the half round trip it reports;
#   - on a slow guest (50 ms a round trip) the readings stop after about
#     --seconds, not after 100 round trips, before and after the command;
#   - the command's exit status is passed on; wrong use says how to use it.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'kill $guest 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
tool=$TOP/tools/guest-clock/guest-clock-offset

python3 - "$tmp/clock.sock" <<'PY' &
import socket, sys, time
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(sys.argv[1])
srv.listen(1)
while True:
    conn, _ = srv.accept()
    while True:
        c = conn.recv(1)
        if not c or c == b'q':
            break
        if c == b'c':
            time.sleep(0.05)
            conn.sendall(b'%d\n' % (time.clock_gettime_ns(time.CLOCK_MONOTONIC) + 5000000000))
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

rc=0
python3 "$tool" ping "$tmp/clock.sock" --seconds soon >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] && grep -q '^guest-clock-offset: usage:' "$tmp/err"; then
	echo "ok: a wrong --seconds gets the usage"
else
	echo "FAILED: a wrong --seconds: exit status $rc, says '$(cat "$tmp/err")'"
	fail=1
fi
rc=0
python3 "$tool" ping "$tmp/none.sock" >"$tmp/out" 2>"$tmp/err" || rc=$?
if [ $rc -ne 0 ] && grep -q 'none.sock' "$tmp/err"; then
	echo "ok: no guest at the socket: $(cat "$tmp/err")"
else
	echo "FAILED: no guest at the socket: exit status $rc, says '$(cat "$tmp/err")'"
	fail=1
fi
exit $fail
