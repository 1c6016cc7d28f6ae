#!/usr/bin/env python3
"""Run one QMP command in a QEMU and print what it returns, as JSON.

    scripts/qmp.py SOCKET COMMAND [ARGUMENTS]

SOCKET is the QEMU's -qmp unix socket; ARGUMENTS, the command's, as a JSON
object.  Exits non-zero, with QEMU's
description, if the command fails, and after 30 s without an answer.
"""
import json
import socket
import sys


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    arguments = json.loads(sys.argv[3]) if len(sys.argv) == 4 else {}
    sock = socket.socket(socket.AF_UNIX)
    sock.settimeout(30)
    sock.connect(sys.argv[1])
    stream = sock.makefile("rw")
    json.loads(stream.readline())
    for command, args in (("qmp_capabilities", {}), (sys.argv[2], arguments)):
        stream.write(json.dumps({"execute": command, "arguments": args}) + "\n")
        stream.flush()
        while True:
            reply = json.loads(stream.readline())
            if "return" in reply or "error" in reply:
                break
        if "error" in reply:
            sys.exit(f"QMP {command}: {reply['error'].get('desc')}")
    print(json.dumps(reply["return"]))


if __name__ == "__main__":
    main()
