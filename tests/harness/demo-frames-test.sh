#!/bin/bash
# What the demo's checks (demo/demochecks/read.py) count as a guest chain: a frame
# at another address than the sample's IP.  perf shows the functions
# inlined at an address as frames at that same address ("(inlined)"):
# a VM that did not opt in has such samples once its sideband places them
# in programs with debug info, and they are no chain.
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat >"$tmp/script.txt" <<'TXT'
VM:  196 VCPU:000 pong     160/160     [000]   135.041545:    4000000    cpu-clock/call-graph=fp/: 
	    555f095bf2eb now_ns+0x6b (inlined)
	    555f095bf2eb pong_volley+0x6b (/bin/pong)

VM:  196 VCPU:000 pong     160/160     [000]   135.045545:    4000000    cpu-clock/call-graph=fp/: 
	    555f095bf2eb pong_volley+0x6b (/bin/pong)

VM:  70 VCPU:001 ping     150/150     [001]   135.049545:    4000000    cpu-clock/call-graph=dwarf/: 
	    555f095bf100 ping_stroke+0x10 (/bin/ping)
	    555f095bf200 main+0x20 (/bin/ping)

TXT
python3 - "$TOP/demo" "$tmp/script.txt" <<'PY'
import sys
sys.path.insert(0, sys.argv[1])
from demochecks.read import beyond_ip, parse_script
samples = parse_script(sys.argv[2])
got = [beyond_ip(s) for s in samples]
want = [False, False, True]
if got == want:
    print("ok: inlined frames at the IP are no chain; a caller at another address is")
    sys.exit(0)
print("FAILED: beyond the IP: %s, want %s" % (got, want))
sys.exit(1)
PY
