#!/bin/bash
# Build perf from the patched tools/perf, out of tree.
#
#   scripts/build-perf.sh            $PERFBUILD, with libelf, libdw,
#                                    libtraceevent and Python scripting
#                                    (lib.sh's perf_make); fails if any of
#                                    those was left out
#   scripts/build-perf.sh VARIANT    one of lib.sh's PERF_VARIANTS (noelf,
#                                    unwind) into $BUILD/perf-VARIANT, without
#                                    Python, checked to be built as the
#                                    variant says
#   scripts/build-perf.sh released   the perf of the series' base, as
#                                    released (the tree's tag 'base'), into
#                                    $BUILD/perf-released: the previous perf,
#                                    whose decoding of our recordings
#                                    tests/demo/released-perf-test.sh checks
#   scripts/build-perf.sh bench      the series' perf built as 'released'
#                                    is (no Python, no Rust), into
#                                    $BUILD/perf-bench, for make bench-perf:
#                                    Python support builds all of perf with
#                                    -fPIC, which alone changes GCC's
#                                    inlining and costs about 1% of perf
#                                    script's instructions
set -euo pipefail
. "$(dirname "$0")/lib.sh"

variant=${1:-}
tree=$TREE
if [ -z "$variant" ]; then
	obj=$PERFBUILD args=() what="libelf, libdw, libtraceevent, python"
	want=("dwarf: \[ on" "libelf: \[ on" "libtraceevent: \[ on" "libpython: \[ on")
elif [ "$variant" = bench ]; then
	obj=$BUILD/perf-bench args=(NO_LIBPYTHON=1 NO_RUST=1)
	what="the series, built as the released one is"
	want=("libelf: \[ on" "libpython: \[ OFF")
elif [ "$variant" = released ]; then
	# NO_RUST: the base lacks perf-fixes 1, without which ar can't archive
	# the Rust workload where a newer rustc than the host's LLVM is.
	obj=$BUILD/perf-released args=(NO_LIBPYTHON=1 NO_RUST=1)
	what="the series' base, $(git -C "$TREE" rev-parse --short base)"
	want=("libelf: \[ on")
	# Only what perf's build reads of the kernel tree.
	tree=$BUILD/perf-released-src
	rm -rf "$tree" && mkdir -p "$tree"
	git -C "$TREE" archive base Makefile arch include scripts tools | tar -x -C "$tree" ||
		die "can't take the base of $TREE"
else
	obj=$BUILD/perf-$variant
	# No Python scripting: the variants' tests don't use it.
	read -r -a args <<<"$(perf_variant_args "$variant") NO_LIBPYTHON=1"
	what="$variant: ${args[*]}"
	case $variant in
	noelf) want=("libelf: \[ OFF") ;;
	unwind) want=("libunwind: \[ on") ;;
	esac
fi
mkdir -p "$obj"
say "building perf ($what)"
perf_make "$tree" "$obj" "${args[@]}" >"$obj/build.log" 2>&1 || {
	tail -n 40 "$obj/build.log"
	die "perf build failed (log: $obj/build.log)"
}
opts=$("$obj/perf" version --build-options)
for feature in "${want[@]}"; do
	grep -qE "^ +$feature" <<<"$opts" || {
		echo "$opts"
		die "perf was not built as it should be: no '$feature'"
	}
done
# perf's python module, from this build (perf test's "'import perf' in
# python" looks where perf installs it, and finds the distribution's
# linux-perf module there if that is installed: tests/expected leaves it out).
if [ -z "$variant" ]; then
	module=$(cd / && PYTHONPATH=$obj/python /usr/bin/python3 -c 'import perf; print(perf.__file__)') ||
		die "perf's python module in $obj/python does not import"
	case $module in
	"$obj"/python/*) say "perf's python module imports: $module" ;;
	*) die "python imported perf's module from $module, not from this build ($obj/python)" ;;
	esac
fi
say "$("$obj/perf" version) at $obj/perf"
