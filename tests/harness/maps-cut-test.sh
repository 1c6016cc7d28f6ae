#!/bin/bash
# demo/maps-cut.py, the demo's check that the guest's perf read every
# process's maps whole: a recording whose perf gave up on them (perf
# record --proc-map-timeout 0, as a slow guest's 500 ms) names the
# processes; one with the demo guest's 30 s names none; a file that is
# not a perf.data is refused.
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ -x "$PERF" ] || { echo "no perf at $PERF: make check builds it before the harness tests"; exit 1; }
cut() { python3 "$TOP/demo/maps-cut.py" "$@"; }
sleep 30 &
sleeper=$!
"$PERF" record -q -a -e dummy --proc-map-timeout 0 -o "$tmp/cut.data" true 2>"$tmp/cut.err"
if cut "$tmp/cut.data" >"$tmp/cut.out" && grep -q "^$sleeper sleep$" "$tmp/cut.out"; then
	ok "--proc-map-timeout 0: $(wc -l <"$tmp/cut.out") processes named, sleep ($sleeper) among them"
else
	bad "--proc-map-timeout 0: $(head -n 5 "$tmp/cut.out") (perf: $(head -n 2 "$tmp/cut.err"))"
fi
"$PERF" record -q -a -e dummy --proc-map-timeout 30000 -o "$tmp/whole.data" true 2>/dev/null
if cut "$tmp/whole.data" >"$tmp/whole.out" && [ ! -s "$tmp/whole.out" ]; then
	ok "--proc-map-timeout 30000: no process named"
else
	bad "--proc-map-timeout 30000: $(head -n 5 "$tmp/whole.out")"
fi
head -c 4096 /dev/urandom >"$tmp/junk"
if cut "$tmp/junk" >/dev/null 2>"$tmp/junk.err"; then
	bad "a file that is not a perf.data was read"
else
	ok "not a perf.data: $(cat "$tmp/junk.err")"
fi
kill "$sleeper" 2>/dev/null
exit $fail
