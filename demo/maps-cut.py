#!/usr/bin/env python3
"""The processes whose mappings a perf.data's sideband holds only in part:
perf record gave up reading their /proc/PID/maps after --proc-map-timeout
(500 ms unless given, which a nested TCG guest can pass) and marked the
last mapping it wrote with PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT.  Their
samples fall on no mapping, so on no thread of the guest.

  demo/maps-cut.py PERF.DATA

prints "PID COMM" for each such process (nothing when none) and exits 0;
exits 1 when the file is not a perf.data it can read.
"""

import struct
import sys

MAGIC = b"PERFILE2"
PERF_RECORD_MMAP = 1
PERF_RECORD_COMM = 3
PERF_RECORD_MMAP2 = 10
PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT = 1 << 12
HEADER = struct.Struct("=IHH")


def records(data):
    """(type, misc, body) of each record of a perf.data's data section."""
    if data[:8] != MAGIC:
        raise ValueError("not a perf.data file (no PERFILE2 magic)")
    # struct perf_file_header: magic, size, attr_size, attrs, data, ...
    offset, size = struct.unpack_from("=QQ", data, 40)
    if offset + size > len(data):
        raise ValueError("its data section runs past the end of the file")
    pos, end = offset, offset + size
    while pos + HEADER.size <= end:
        kind, misc, length = HEADER.unpack_from(data, pos)
        if length < HEADER.size or pos + length > end:
            raise ValueError(f"a record of size {length} at byte {pos}")
        yield kind, misc, data[pos + HEADER.size:pos + length]
        pos += length


def cut_processes(data):
    """{pid: comm} of the processes with a mapping marked cut."""
    comms, cut = {}, {}
    for kind, misc, body in records(data):
        if kind == PERF_RECORD_COMM and len(body) > 8:
            pid = struct.unpack_from("=I", body)[0]
            comms[pid] = body[8:].split(b"\0", 1)[0].decode(errors="replace")
        elif kind in (PERF_RECORD_MMAP, PERF_RECORD_MMAP2) and \
                misc & PERF_RECORD_MISC_PROC_MAP_PARSE_TIMEOUT:
            cut[struct.unpack_from("=I", body)[0]] = None
    return {pid: comms.get(pid, "?") for pid in cut}


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.split("\n\n")[1])
    try:
        with open(argv[1], "rb") as f:
            data = f.read()
        cut = cut_processes(data)
    except (OSError, ValueError, struct.error) as e:
        print(f"{argv[1]}: {e}", file=sys.stderr)
        return 1
    for pid, comm in sorted(cut.items()):
        print(pid, comm)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
