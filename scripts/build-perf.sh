#!/bin/bash
# Build perf from the patched tools/perf, out of tree, with libelf, libdw,
# libtraceevent and Python scripting; fail if any of those was left out.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

PERFBUILD=$BUILD/perf
mkdir -p "$PERFBUILD"
say "building perf (libelf, libdw, libtraceevent, python)"
make -s -C "$TREE/tools/perf" O="$PERFBUILD" -j"$(nproc)" \
	CC="ccache gcc" NO_LIBPERL=1 NO_LIBBABELTRACE=1 NO_LIBUNWIND=1 \
	NO_SDT=1 NO_JVMTI=1 NO_LIBPFM4=1 BUILD_BPF_SKEL=0 \
	PYTHON=/usr/bin/python3 >"$PERFBUILD/build.log" 2>&1 || {
	tail -n 40 "$PERFBUILD/build.log"
	die "perf build failed (log: $PERFBUILD/build.log)"
}
opts=$("$PERFBUILD/perf" version --build-options)
for feature in dwarf libelf libtraceevent libpython; do
	echo "$opts" | grep -qE "^ +$feature: \[ on" || {
		echo "$opts"
		die "perf was built without $feature"
	}
done
say "$("$PERFBUILD/perf" version) at $PERFBUILD/perf"
