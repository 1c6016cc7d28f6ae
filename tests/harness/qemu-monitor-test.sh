#!/bin/bash
# scripts/qemu-monitor.py against a made-up QEMU monitor that answers as
# QEMU 7.2 did for L1 stuck in a guest (November 27, 2026: a guest's user
# code, the guest kernel's GDT, L1's timer vector 236 pending in the local
# APIC) and for an idle L1, and as QEMU 10.0 (L1's QEMU now) did for a
# guest's user code with L1's timer pending (its local APIC in x2APIC
# mode, more LVT lines): "stuck" says so for the first and the last (one
# poll can't tell a moment from a minute: l1-run.sh polls three times) and
# not for the others (an idle L1; L1's kernel with the timer pending for a
# moment), and "where" names L1's kernel function and shows the local APIC.
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

# serve REGISTERS LAPIC [VERSION]: a monitor on $tmp/sock answering from
# those files, as QEMU VERSION (7.2).
serve() {
	[ -z "$server" ] || { kill "$server"; wait "$server" 2>/dev/null; }
	rm -f "$tmp/sock"
	sed "s/@DEFAULT_IDLE@/$idle/" "$fixtures/$1" >"$tmp/registers"
	cp "$fixtures/$2" "$tmp/lapic"
	python3 - "$tmp/sock" "$tmp/registers" "$tmp/lapic" "${3:-7.2}" <<'PY' &
import socket, sys
path, registers, lapic, version = sys.argv[1:]
answers = {"info registers -a": open(registers).read(),
           "info lapic": open(lapic).read()}
srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
srv.bind(path)
srv.listen(4)
while True:
    conn, _ = srv.accept()
    conn.sendall(f"QEMU {version} monitor - type 'help' for more information\r\n(qemu) ".encode())
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

# in_guest QEMU RIP GDT COUNT: the monitor serving (serve) a CPU running a
# guest's code at RIP, its kernel's GDT, L1's timer (initial count COUNT)
# expired and pending: "stuck" says so, "where" shows both.
in_guest() {
	local qemu=$1 rip=$2 gdt=$3 count=$4
	if monitor stuck "$tmp/sock" "$map" && grep -q "^CPU 0: RIP=$rip CPL=3 GDT=$gdt, outside L1's kernel with L1's timer (vector 236) pending; timer armed with $count$" "$tmp/out"; then
		ok "$qemu: a guest with L1's timer pending: $(cat "$tmp/out")"
	else
		bad "$qemu: a guest with L1's timer pending not seen: $(cat "$tmp/out")"
	fi
	monitor where "$tmp/sock" "$map"
	grep -q "^CPU 0 local APIC: Timer DCR=0x3 (divide by 16) initial_count = $count current_count = 0; ISR (none); IRR 236;" "$tmp/out" &&
		grep -q "^CPU 0: RIP=$rip (not in L1's kernel text" "$tmp/out" &&
		ok "$qemu: where shows the guest's RIP and L1's local APIC" || bad "$qemu: where said: $(grep '^CPU' "$tmp/out")"
}

serve stuck-registers.txt stuck-lapic.txt
in_guest "QEMU 7.2" 00005555cbe44420 fffffe56bc694000 26096

serve idle-registers.txt idle-lapic.txt
monitor stuck "$tmp/sock" "$map"
[ $? -eq 1 ] && ok "an idle L1 is not stuck" || bad "an idle L1 called stuck: $(cat "$tmp/out")"
monitor where "$tmp/sock" "$map"
grep -q "^CPU 0: RIP=$idle (default_idle+0x17 in L1's kernel)" "$tmp/out" &&
	ok "where names default_idle+0x17" || bad "where said: $(grep '^CPU' "$tmp/out")"

serve idle-registers.txt stuck-lapic.txt
monitor stuck "$tmp/sock" "$map"
[ $? -eq 1 ] && ok "L1's kernel with its timer pending is not stuck" || bad "L1's kernel called stuck: $(cat "$tmp/out")"

serve qemu10-guest-registers.txt qemu10-guest-lapic.txt 10.0.2
in_guest "QEMU 10.0" 000055e42a0c642f fffffe62b6052000 173239

kill "$server"; wait "$server" 2>/dev/null; server=
monitor stuck "$tmp/sock" "$map"
[ $? -eq 2 ] && ok "no monitor: status 2" || bad "no monitor gave: $(cat "$tmp/out")"
exit $fail
