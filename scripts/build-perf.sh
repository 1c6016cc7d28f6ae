#!/bin/bash
# Build perf from the patched tools/perf, out of tree ($PERFBUILD), with
# libelf, libdw, libtraceevent and Python scripting (lib.sh's perf_make);
# fail if any of those was left out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

mkdir -p "$PERFBUILD"
say "building perf (libelf, libdw, libtraceevent, python)"
perf_make "$TREE" "$PERFBUILD" >"$PERFBUILD/build.log" 2>&1 || {
	tail -n 40 "$PERFBUILD/build.log"
	die "perf build failed (log: $PERFBUILD/build.log)"
}
opts=$("$PERF" version --build-options)
for feature in dwarf libelf libtraceevent libpython; do
	echo "$opts" | grep -qE "^ +$feature: \[ on" || {
		echo "$opts"
		die "perf was built without $feature"
	}
done
say "$("$PERF" version) at $PERF"
