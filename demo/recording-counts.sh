#!/bin/bash
# What a perf.data holds and lost, from perf report --stats:
#   SAMPLES LOST CHUNKS
# its samples, the samples the kernel dropped (perf record reads each
# event's count at the end and writes PERF_RECORD_LOST_SAMPLES), and the
# PERF_RECORD_LOST records (each a chunk of records lost while the ring
# was full).  Exit status 1 when perf can't read the file.
#
#   demo/recording-counts.sh PERF.DATA
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 PERF.DATA"
out=$("$PERF" report --stats -i "$1" 2>/dev/null) || exit 1
awk '/^Aggregated stats/ { section = "all"; next }
	/ stats:$/ { section = "event"; next }
	section == "all" && $1 == "SAMPLE" && $2 == "events:" { samples = $3 }
	section == "all" && $1 == "LOST" && $2 == "events:" { chunks = $3 }
	section == "event" && $1 == "LOST_SAMPLES" && $2 == "events:" { lost += $3 }
	END { if (section == "") exit 1; print samples + 0, lost + 0, chunks + 0 }' <<<"$out"
