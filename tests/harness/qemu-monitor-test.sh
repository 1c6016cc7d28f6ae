#!/bin/bash
# scripts/qemu-monitor.py against a made-up QEMU monitor that answers as
# QEMU 7.2 did for L1 stuck in a guest (November 27, 2026: a guest's user
# code, the guest kernel's GDT, L1's timer vector 236 pending in the local
# APIC) and for an idle L1: "stuck" says so for the first and not for the
# others (an idle L1; L1's kernel with the timer pending for a moment),
# and "where" names L1's kernel function and shows the local APIC.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/scripts/lib.sh"
fixtures=$TOP/tests/harness/qemu-monitor
map=$KBUILD/System.map
[ -f "$map" ] || { echo "no $map: make check builds the kernel first"; exit 1; }
tmp=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null; rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAIL: $*"; fail=1; }

# An address in L1's default_idle(), where an idle L1 halts.
idle=$(awk '$3 == "default_idle" { print $1; exit }' "$map")
[ -z "$idle" ] || idle=$(printf '%016x' $((0x$idle + 0x17)))
[ -n "$idle" ] || { echo "no default_idle in $map"; exit 1; }

# serve REGISTERS LAPIC: a monitor on $tmp/sock answering from those files.
serve() {
	[ -z "$server" ] || { kill "$server"; wait "$server" 2>/dev/null; }
	rm -f "$tmp/sock"
	sed "s/@DEFAULT_IDLE@/$idle/" "$fixtures/$1" >"$tmp/registers"
	cp "$fixtures/$2" "$tmp/lapic"
	python3 - "$tmp/sock" "$tmp/registers" "$tmp/lapic" <<'PY' &
import socket, sys
path, registers, lapic = sys.argv[1:]
answers = {"info registers -a": open(registers).read(),
           "info lapic": open(lapic).read()}
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
while True:
    conn, _ = srv.accept()
    conn.sendall(b"QEMU 7.2 monitor - type 'help' for more information\r\n(qemu) ")
    buf = b""
    while True:
        data = conn.recv(4096)
        if not data:
            break
        buf += data
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            command = line.decode().strip()
            answer = answers.get(command, "")
            conn.sendall(command.encode() + b"\r\n" + answer.replace("\n", "\r\n").encode() + b"(qemu) ")
    conn.close()
PY
	server=$!
	for _ in $(seq 50); do [ -S "$tmp/sock" ] && return 0; sleep 0.1; done
	bad "the made-up monitor did not start"
}

monitor() { python3 "$TOP/scripts/qemu-monitor.py" "$@" >"$tmp/out" 2>&1; }

serve stuck-registers.txt stuck-lapic.txt
if monitor stuck "$tmp/sock" "$map" && grep -q "^CPU 0: RIP=00005555cbe44420 CPL=3 GDT=fffffe56bc694000, outside L1's kernel with L1's timer (vector 236) pending" "$tmp/out"; then
	ok "stuck in a guest with L1's timer pending: $(cat "$tmp/out")"
else
	bad "stuck in a guest not seen: $(cat "$tmp/out")"
fi
monitor where "$tmp/sock" "$map"
grep -q "^CPU 0 local APIC: Timer DCR=0x3 (divide by 16) initial_count = 26096 current_count = 0; ISR (none); IRR 236;" "$tmp/out" &&
	grep -q "^CPU 0: RIP=00005555cbe44420 (not in L1's kernel text" "$tmp/out" &&
	ok "where shows the guest's RIP and L1's local APIC" || bad "where said: $(grep '^CPU' "$tmp/out")"

serve idle-registers.txt idle-lapic.txt
monitor stuck "$tmp/sock" "$map"
[ $? -eq 1 ] && ok "an idle L1 is not stuck" || bad "an idle L1 called stuck: $(cat "$tmp/out")"
monitor where "$tmp/sock" "$map"
grep -q "^CPU 0: RIP=$idle (default_idle+0x17 in L1's kernel)" "$tmp/out" &&
	ok "where names default_idle+0x17" || bad "where said: $(grep '^CPU' "$tmp/out")"

serve idle-registers.txt stuck-lapic.txt
monitor stuck "$tmp/sock" "$map"
[ $? -eq 1 ] && ok "L1's kernel with its timer pending is not stuck" || bad "L1's kernel called stuck: $(cat "$tmp/out")"

kill "$server"; wait "$server" 2>/dev/null; server=
monitor stuck "$tmp/sock" "$map"
[ $? -eq 2 ] && ok "no monitor: status 2" || bad "no monitor gave: $(cat "$tmp/out")"
exit $fail
