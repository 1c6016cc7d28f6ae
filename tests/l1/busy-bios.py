#!/usr/bin/env python3
"""Write a 64 KiB firmware image whose guest keeps one vCPU busy.

    tests/l1/busy-bios.py FILE

In real mode at the reset vector: jmp far f000:0000; there: inc ecx;
test ecx, 0xfffff; jnz back; mov dx, 0x402; mov al, '.'; out dx, al;
jmp back: a '.' on the debug console (isa-debugcon at 0x402) every 2^20
rounds, so that a test can tell that the guest still runs.
"""
import sys

if len(sys.argv) != 2:
    sys.exit(__doc__)
image = bytearray(b'\xf4' * 65536)
loop = bytes.fromhex('6641' '66f7c1ffff0f00' '75f5' 'ba0204' 'b02e' 'ee' 'ebed')
image[0:len(loop)] = loop
image[0xfff0:0xfff5] = bytes.fromhex('ea0000' '00f0')
with open(sys.argv[1], 'wb') as f:
    f.write(image)
