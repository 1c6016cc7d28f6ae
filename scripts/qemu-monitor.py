#!/usr/bin/env python3
"""Ask a running QEMU's human monitor (HMP, on a Unix socket).

  scripts/qemu-monitor.py ask SOCKET COMMAND...
        prints each command's answer after a "(qemu) COMMAND" line
  scripts/qemu-monitor.py where SOCKET [SYSTEM_MAP]
        a line per CPU: its RIP (with the symbol of SYSTEM_MAP it falls
        in, when it falls in that kernel's text), CPL, CR3 and whether it
        halted; then each CPU's local APIC (timer, pending and in-service
        vectors), registers, instructions at RIP and stack (its words that
        fall in SYSTEM_MAP's text named)
  scripts/qemu-monitor.py stuck SOCKET SYSTEM_MAP
        exits 0, with a line saying where, when a CPU is outside L1's
        kernel text with L1's timer interrupt pending in its local APIC
        (an interrupt L1 takes at once when it runs at all), else 1

Each wait is bounded (5 s); exits 2 (stuck) or 1 when QEMU does not answer.
scripts/l1-run.sh asks where L1's CPUs are before it stops an L1 that ran
out of time: in L1's kernel (and where), in L1's user space, or in a
guest (RIP in none of L1's text, another GDT); and, every 30 s, whether
QEMU got stuck running a guest with L1's own timer interrupt pending.
"""

import bisect
import re
import socket
import sys

PROMPT = b"(qemu) "
WAIT = 5.0


def until_prompt(sock):
    """What QEMU writes up to its next prompt."""
    data = b""
    while not data.endswith(PROMPT):
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("QEMU closed the monitor")
        data += chunk
    return data[: -len(PROMPT)]


def ask(path, commands):
    """[(command, answer)] of QEMU's monitor at PATH."""
    out = []
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(WAIT)
        sock.connect(path)
        until_prompt(sock)
        for command in commands:
            sock.sendall(command.encode() + b"\n")
            answer = until_prompt(sock).decode(errors="replace")
            # QEMU echoes the command line (with terminal escapes) first.
            lines = answer.replace("\r", "").split("\n")[1:]
            out.append((command, "\n".join(line for line in lines if line.strip())))
    return out


# Symbols that end a kernel's text: past them is no function.
TEXT_ENDS = ("_etext", "_einittext", "__inittext_end", "__entry_text_end", "_end")


def text_symbols(system_map):
    """Sorted (address, name) of a System.map's text symbols."""
    symbols = []
    with open(system_map, encoding="utf-8", errors="replace") as f:
        for line in f:
            fields = line.split()
            if len(fields) == 3 and fields[1] in "tTwW":
                symbols.append((int(fields[0], 16), fields[2]))
    symbols.sort()
    return symbols


def symbol(symbols, address):
    """"name+0xoff" of the text symbol ADDRESS falls in, or None."""
    if not symbols or not symbols[0][0] <= address <= symbols[-1][0] + 0x100000:
        return None
    i = bisect.bisect_right(symbols, (address, "\uffff")) - 1
    if i < 0:
        return None
    start, name = symbols[i]
    if name in TEXT_ENDS:
        return None
    return f"{name}+{address - start:#x}"


CPU = re.compile(r"^CPU#(\d+)", re.M)


def field(regs, name):
    m = re.search(rf"\b{name}=([0-9a-fA-F]+)", regs)
    return m.group(1) if m else "?"


def gdt(regs):
    """The GDT's base: L1's kernel keeps its own at one address (its CPU
    entry area), a guest's kernel elsewhere."""
    m = re.search(r"^GDT=\s+([0-9a-fA-F]+)", regs, re.M)
    return m.group(1) if m else "?"


# Linux's LOCAL_TIMER_VECTOR: the local APIC timer's interrupt.
TIMER_VECTOR = "236"


def cpu_dumps(dump):
    """[(cpu, its part of "info registers -a")]."""
    cpus = [(int(m.group(1)), m.start()) for m in CPU.finditer(dump)]
    return [(cpu, dump[start:cpus[i + 1][1] if i + 1 < len(cpus) else len(dump)])
            for i, (cpu, start) in enumerate(cpus)]


def stuck(path, system_map):
    """0 if a CPU runs outside L1's kernel with L1's timer pending; each
    such CPU a line, ending with its timer's initial count: the count L1
    last armed it with, which a CPU that takes its timer interrupt arms
    anew at each tick (scripts/l1-run.sh wants the same count three polls
    in a row before it calls L1 stuck)."""
    symbols = text_symbols(system_map)
    (_, dump), = ask(path, ["info registers -a"])
    found = False
    for cpu, regs in cpu_dumps(dump):
        try:
            inside = symbol(symbols, int(field(regs, "RIP"), 16))
        except ValueError:
            inside = None
        if inside:
            continue
        _, lapic = ask(path, [f"cpu {cpu}", "info lapic"])[1]
        irr = next((line.split()[1:] for line in lapic.split("\n")
                    if line.startswith("IRR")), [])
        if TIMER_VECTOR not in irr:
            continue
        count = re.search(r"initial_count = (\d+)", lapic)
        print(f"CPU {cpu}: RIP={field(regs, 'RIP')} CPL={field(regs, 'CPL')} "
              f"GDT={gdt(regs)}, outside L1's kernel with L1's timer "
              f"(vector {TIMER_VECTOR}) pending; timer armed with "
              f"{count.group(1) if count else '?'}")
        found = True
    return 0 if found else 1


def where(path, system_map=None):
    symbols = text_symbols(system_map) if system_map else []
    (_, dump), = ask(path, ["info registers -a"])
    details = []
    for cpu, regs in cpu_dumps(dump):
        rip = field(regs, "RIP")
        try:
            name = symbol(symbols, int(rip, 16))
        except ValueError:
            name = None
        place = f" ({name} in L1's kernel)" if name else ""
        if symbols and not name:
            place = " (not in L1's kernel text: L1's user space or a guest)"
        print(f"CPU {cpu}: RIP={rip}{place} CPL={field(regs, 'CPL')} "
              f"CR3={field(regs, 'CR3')} GDT={gdt(regs)} HLT={field(regs, 'HLT')}")
        details += [f"cpu {cpu}", "info lapic", "x/8i $pc", "x/64gx $esp"]
    print(dump)
    current = None
    for command, answer in ask(path, details):
        print(f"(qemu) {command}")
        if command.startswith("cpu "):
            current = command.split()[1]
        if command.startswith("x/64gx"):
            print(f"CPU {current} {stack_text(symbols, answer)}")
        if command == "info lapic":
            print(f"CPU {current} {lapic_text(answer)}")
        if not command.startswith("cpu "):
            print(answer)
    return 0


def lapic_text(answer):
    """A CPU's local APIC in a line: its timer, pending and in-service
    vectors, priorities (an interrupt pending while the CPU runs on says
    that the CPU does not take it)."""
    keep = []
    for line in answer.split("\n"):
        words = line.split()
        if words and words[0] in ("Timer", "ISR", "IRR", "APR"):
            keep.append(" ".join(words))
    return "local APIC: " + ("; ".join(keep) or "no answer")


def stack_text(symbols, answer):
    """The words of a stack dump that fall in L1's kernel text, named."""
    names = []
    for line in answer.split("\n"):
        for word in line.partition(":")[2].split():
            try:
                name = symbol(symbols, int(word, 16))
            except ValueError:
                continue
            if name:
                names.append(name)
    return "stack words in L1's kernel text: " + (", ".join(names) or "none")


def main(argv):
    usage = __doc__.split("\n\n")[1]
    if len(argv) < 3 or argv[1] not in ("ask", "where", "stuck"):
        sys.exit(usage)
    path = argv[2]
    try:
        if argv[1] == "where" and len(argv) in (3, 4):
            return where(path, *argv[3:])
        if argv[1] == "stuck" and len(argv) == 4:
            return stuck(path, argv[3])
        if argv[1] == "ask" and len(argv) > 3:
            for command, answer in ask(path, argv[3:]):
                print(f"(qemu) {command}\n{answer}")
            return 0
    except (OSError, ConnectionError) as e:
        print(f"no answer from QEMU's monitor at {path}: {e}", file=sys.stderr)
        return 2 if argv[1] == "stuck" else 1
    sys.exit(usage)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
