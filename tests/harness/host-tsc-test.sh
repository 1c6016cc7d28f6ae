#!/bin/bash
# lib.sh's host_tsc_khz, the TSC rate L1 gets (scripts/l1-run.sh), with a
# made-up dmesg and /proc/cpuinfo: read from the kernel's log; from the
# CPU where the log is root's and the CPU says it (tsc_known_freq); and
# where neither, nothing, with a warning that says why and what it costs
# (Debian restricts dmesg to root: a user lost the guard silently).
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

mkdir "$tmp/bin"
printf '#!/bin/sh\necho "[    0.000000] tsc: Detected 2596.124 MHz processor"\n' >"$tmp/bin/dmesg-ok"
printf '#!/bin/sh\necho "dmesg: read kernel buffer failed: Operation not permitted" >&2\nexit 1\n' >"$tmp/bin/dmesg-denied"
chmod +x "$tmp/bin"/*
printf 'flags\t\t: fpu tsc constant_tsc tsc_known_freq\ncpu MHz\t\t: 2100.000\n' >"$tmp/cpuinfo-known"
printf 'flags\t\t: fpu tsc constant_tsc\ncpu MHz\t\t: 2100.000\n' >"$tmp/cpuinfo-unknown"
# case NAME DMESG CPUINFO WANT WARNS
case_() {
	ln -sf "$tmp/bin/dmesg-$2" "$tmp/bin/dmesg"
	PATH=$tmp/bin:$PATH CPUINFO=$tmp/cpuinfo-$3 host_tsc_khz >"$tmp/out" 2>"$tmp/err"
	if [ "$(cat "$tmp/out")" = "$4" ] && { [ "$5" = warns ] && grep -q "can't read the kernel log (dmesg: read kernel buffer failed: Operation not permitted)" "$tmp/err" ||
		{ [ "$5" = quiet ] && [ ! -s "$tmp/err" ]; }; }; then
		ok "$1: '$(cat "$tmp/out")' $5"
	else
		bad "$1: '$(cat "$tmp/out")', stderr '$(cat "$tmp/err")' (want '$4', $5)"
	fi
}
case_ "the kernel's log" ok unknown 2596124 quiet
case_ "the log denied, the CPU's known rate" denied known 2100000 quiet
case_ "the log denied, no known rate" denied unknown "" warns
exit $fail
