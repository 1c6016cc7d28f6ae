#!/bin/bash
# perf's ORC unwinder on a kernel image's tables, with a stack built from
# them, and its reader of the image's kallsyms tables: an offline test, no
# L1 needed (make check's perf/orc-stock-kernel and perf/orc-base-kernel).
# The ORC and kallsyms test cases that take an image pass on it, and say
# its ORC format (the kallsyms layouts differ too: 6.12's has a base and
# absolute per-CPU symbols, 7.3's offsets from their own place):
#
#   tests/perf/orc-kernel-test.sh stock-kernel   Debian's stock cloud
#       kernel image, the demo guest's (demo/stock-kernel.sh, run by
#       demo/deps.sh): ORC format 3
#   tests/perf/orc-kernel-test.sh base-kernel    Debian's cloud kernel of
#       the base series (scripts/orc-image.sh fetches it): the ORC format
#       of 7.3, whose registers were renumbered (version 4)
set -uo pipefail
. "$(dirname "$0")/../../scripts/lib.sh"
case ${1:-} in
stock-kernel) image=$STOCK_KERNEL/vmlinuz version=3 ;;
base-kernel)
	bash "$TOP/scripts/orc-image.sh" || die "could not fetch Debian's $LINUX_SERIES cloud kernel"
	image=$ORC_IMAGE/vmlinuz version=4
	;;
*) die "usage: $0 stock-kernel|base-kernel" ;;
esac
[ -s "$image" ] || die "no $image"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$PERF" test -vv --dso "$image" "ORC unwinding: kernel image" "Kernel image kallsyms: kernel image" 2>&1 |
	tee "$out"
grep -q 'ORC unwinding: kernel image (perf test --dso IMAGE) *: Ok$' "$out" &&
	grep -q 'ORC unwinding: kernel image found by build-id (perf test --dso IMAGE) *: Ok$' "$out" &&
	grep -q "ORC entries, format version $version," "$out" &&
	grep -q 'Kernel image kallsyms: kernel image (perf test --dso IMAGE) *: Ok$' "$out"
