#!/bin/bash
# 'make demo' used wrongly: each case must end with a clear message and a
# non-zero exit, except missing guest symbols, which must warn and still
# draw the frames as addresses.
#   tests/demo/bad-use-test.sh DEMO_OUTDIR   (a finished demo's output)
set -uo pipefail
. "$(dirname "$0")/../testlib.sh"

[ $# -eq 1 ] || die "usage: $0 DEMO_OUTDIR"
demo=$1

# expect NAME STATUS(0|nonzero) PATTERN COMMAND...: the command's exit status
# and a line of its output matching PATTERN.
expect() {
	local name=$1 want=$2 pattern=$3 rc=0
	shift 3
	"$@" >"$tmp/out" 2>&1 || rc=$?
	if { [ "$want" = 0 ] && [ $rc -ne 0 ]; } || { [ "$want" != 0 ] && [ $rc -eq 0 ]; }; then
		echo "FAILED: $name: exit status $rc"
		fail=1
	elif ! grep -Eq "$pattern" "$tmp/out"; then
		echo "FAILED: $name: no '$pattern' in:"
		fail=1
	else
		echo "ok: $name: exit status $rc, says: $(grep -Em1 "$pattern" "$tmp/out")"
		return
	fi
	sed 's/^/    | /' "$tmp/out" | tail -n 20
}

# count KEY FILE: a figure of a perf kvm script output, as the demo's
# checks count it (demo/checks.py counts: samples, deep_kernel, the
# samples with guest kernel frames beyond the first, placed_user, the
# user space samples given to a guest thread, ...).
count() { python3 "$TOP/demo/checks.py" counts "$2" "$1"; }

: >"$tmp/file"
expect "output directory not writable" nonzero "output directory .* is not writable" \
	bash "$TOP/demo/run.sh" "$tmp/file/out"
expect "bad DEMO_SECONDS" nonzero "DEMO_SECONDS must be" \
	env DEMO_SECONDS=soon bash "$TOP/demo/run.sh" "$tmp/out"
expect "bad DEMO_GUEST" nonzero "DEMO_GUEST must be stock or fp" \
	env DEMO_GUEST=windows bash "$TOP/demo/run.sh" "$tmp/out"
expect "bad DEMO_RATE" nonzero "DEMO_RATE must be a whole number from 10 to 4000, not 'fast'" \
	env DEMO_RATE=fast bash "$TOP/demo/run.sh" "$tmp/out"
expect "bad DEMO_ATTEMPTS" nonzero "DEMO_ATTEMPTS must be a whole number from 1 to 9, not 0" \
	env DEMO_ATTEMPTS=0 bash "$TOP/demo/run.sh" "$tmp/out"
expect "bad DEMO_GUESTS" nonzero "DEMO_GUESTS must be a whole number from 1 to 3, not 4" \
	env DEMO_GUESTS=4 bash "$TOP/demo/run.sh" "$tmp/out"
expect "bad DEMO_AGENTLESS" nonzero "DEMO_AGENTLESS must be 0, 1 or both, not 'yes'" \
	env DEMO_AGENTLESS=yes bash "$TOP/demo/run.sh" "$tmp/out"
expect "DEMO_AGENTLESS=1 with several VMs" nonzero "DEMO_AGENTLESS=1 profiles the stock guest alone" \
	env DEMO_AGENTLESS=1 DEMO_GUESTS=2 bash "$TOP/demo/run.sh" "$tmp/out"
expect "agentless comparison without the host's reads" nonzero "no agentless/guest.data in" \
	bash "$TOP/tests/demo/agentless-test.sh" "$tmp"

# In an L1 whose kvm_amd never starts (its init call is blacklisted): no
# /dev/kvm.  The knob missing, as on a kernel
# without the series, is made up with DEMO_KNOB: L1 runs our kernel.
# shellcheck disable=SC2016
# (One line: l1-run.sh's command file is read by sh, which has no $'\n'.)
L1_APPEND=initcall_blacklist=svm_init bash "$TOP/scripts/l1-run.sh" -t 300 -n demo-bad-use sh -c \
	'DEMO_KNOB=/sys/module/kvm/parameters/no_such_knob bash "$0" "$L1_RESULTS" 5 >"$L1_RESULTS/knob.out" 2>&1; echo $? >"$L1_RESULTS/knob.rc"; bash "$0" "$L1_RESULTS" 5 >"$L1_RESULTS/kvm.out" 2>&1; echo $? >"$L1_RESULTS/kvm.rc"' \
	"$TOP/demo/in-l1.sh" >"$tmp/l1.out" 2>&1 ||
	{ echo "FAILED: L1 without KVM:"; tail -n 20 "$tmp/l1.out" | sed 's/^/    | /'; fail=1; }
res=$OUT/l1/demo-bad-use
expect "knob missing" nonzero "enable_guest_callchains is missing|no_such_knob is missing" \
	sh -c 'cat "$0/knob.out"; exit "$(cat "$0/knob.rc")"' "$res"
expect "no KVM in L1" nonzero "no /dev/kvm" \
	sh -c 'cat "$0/kvm.out"; exit "$(cat "$0/kvm.rc")"' "$res"

# The cases below reuse the demo's recording: only a good one tells
# anything (enough samples, little lost, the sideband whole).
if ! bash "$TOP/demo/recording-check.sh" "$demo" >"$tmp/recording" 2>&1; then
	sed 's/^/    | /' "$tmp/recording"
	echo "FAILED: the demo's recording in $demo is not a good one (above): the cases that reuse it are not run"
	exit 1
fi
echo "ok: the demo's recording is a good one: $(grep -m1 'lost' "$tmp/recording" | sed 's/^ok: //')"

# Missing symbols: the guest shared nothing.
mkdir "$tmp/nosyms"
cp -a "$demo/perf.data" "$tmp/nosyms/"
expect "missing guest symbols" 0 "warning: no guest root .*shown as addresses" \
	bash "$TOP/demo/report.sh" "$tmp/nosyms"
grep -q "warning: no guest sideband .* nor program mappings" "$tmp/out" ||
	{ echo "FAILED: missing guest symbols: no warning about guest user frames"; fail=1; }
if grep -Eq '^\s+ffffffff[0-9a-f]+ \[unknown\]' "$tmp/nosyms/perf-kvm-script.txt" &&
	[ -s "$tmp/nosyms/flamegraph.html" ]; then
	echo "ok: missing guest symbols: frames shown as addresses, flame graph drawn"
else
	echo "FAILED: missing guest symbols: no address-only frames or no flame graph"
	fail=1
fi

# The stock guest's kernel image missing (nowhere perf looks for it by
# build id), or the wrong one given with --guestimage (our own,
# frame-pointer kernel): perf says why it doesn't unwind guest kernel
# stacks, and shows their first frame only, never frames made of what
# the guest's frame pointer register held; it doesn't tell a recording
# with --call-graph dwarf to record with it.
for image in missing wrong; do
	mkdir "$tmp/$image"
	cp -a "$demo/perf.data" "$demo/guest" "$demo/guestmount" "$demo/demo-guest" "$tmp/$image/"
	if [ $image = missing ]; then
		expect "guest kernel image missing" 0 "no guest kernel image" \
			env STOCK_KERNEL="$tmp/none" bash "$TOP/demo/report.sh" "$tmp/$image"
		reason="give the guest's kernel image"
	else
		mkdir "$tmp/ourkernel"
		cp "$BZIMAGE" "$tmp/ourkernel/vmlinuz"
		expect "wrong guest kernel image" 0 "drawing" \
			env GUEST_IMAGE="$tmp/ourkernel/vmlinuz" bash "$TOP/demo/report.sh" "$tmp/$image"
		reason="has no ORC tables"
	fi
	deep=$(count deep_kernel "$tmp/$image/perf-kvm-script.txt")
	if grep -q "Not unwinding guest kernel stacks: .*$reason" "$tmp/$image/perf-kvm-script.err" &&
		grep -q "has no frame pointers" "$tmp/$image/perf-kvm-script.err" &&
		! grep -q "Record it with --call-graph dwarf" "$tmp/$image/perf-kvm-script.err" &&
		[ "$deep" = 0 ]; then
		echo "ok: guest kernel image $image: reported, guest kernel chains cut to their first frame"
	else
		echo "FAILED: guest kernel image $image: no reason given, a hint to record with dwarf, or $deep samples with guest kernel frames beyond the first"
		sed 's/^/    | /' "$tmp/$image/perf-kvm-script.err" | head -n 10
		fail=1
	fi
done

# Two kernel images, as for the guests of several VMs: ours, which is no
# guest's here (and has no ORC tables), then the stock guest's.  The guest
# unwinds with its own, and perf says why the other is of no use.
HOME=$demo/guest-data/root "$PERF" kvm --guest --guestmount="$demo/guestmount" \
	--guestimage="$BZIMAGE,$STOCK_KERNEL/vmlinuz" -i "$demo/perf.data.guest" script \
	>"$tmp/images.txt" 2>"$tmp/images.err"
deep=$(count deep_kernel "$tmp/images.txt")
if [ "$deep" -gt 0 ] && grep -q "Not unwinding guest kernel stacks: $BZIMAGE has no ORC tables" "$tmp/images.err"; then
	echo "ok: two guest kernel images: $deep guest kernel stacks unwound with the guest's, the other refused"
else
	echo "FAILED: two guest kernel images: $deep guest kernel stacks unwound, or no reason given for $BZIMAGE"
	grep -v '^  *-' "$tmp/images.err" | sort -u | head -n 5 | sed 's/^/    | /'
	fail=1
fi

# The stock guest's image given as the series' earlier versions took it,
# with --guestvmlinux, which names symbols only, and not in the guest's
# /boot either: perf says which option unwinds guest kernel stacks, and
# cuts them to their first frame.
if [ "$(cat "$demo/demo-guest" 2>/dev/null)" = stock ]; then
	mkdir "$tmp/vmlinux"
	cp -a "$demo/guest" "$demo/guestmount" "$tmp/vmlinux/"
	rm -f "$tmp/vmlinux/guest/boot/"vmlinu*
	"$PERF" kvm --guest --guestmount="$tmp/vmlinux/guestmount" --guestvmlinux="$STOCK_KERNEL/vmlinuz" \
		-i "$demo/perf.data" script >"$tmp/vmlinux-option.txt" 2>"$tmp/vmlinux-option.err"
	deep=$(count deep_kernel "$tmp/vmlinux-option.txt")
	samples=$(count samples "$tmp/vmlinux-option.txt")
	if grep -q "with --guestimage" "$tmp/vmlinux-option.err" && [ "$deep" = 0 ] &&
		[ "$samples" -gt 0 ]; then
		echo "ok: kernel image given with --guestvmlinux: $samples samples, the option that unwinds named, chains cut"
	else
		echo "FAILED: kernel image given with --guestvmlinux: $samples samples, $deep with guest kernel frames beyond the first, or --guestimage not named"
		sed 's/^/    | /' "$tmp/vmlinux-option.err" | head -n 10
		fail=1
	fi
fi

# A corrupt maps file: perf says so, and keeps every sample and the guest
# kernel symbols.
mkdir "$tmp/badmaps"
cp -a "$demo/perf.data" "$demo/guest" "$demo/guestmount" "$demo/demo-guest" "$tmp/badmaps/"
echo "this is not a maps file" >"$tmp/badmaps/guest/workload.maps"
expect "corrupt guest maps file" 0 "drawing" bash "$TOP/demo/report.sh" "$tmp/badmaps"
if grep -q "is not a /proc/PID/maps file" "$tmp/badmaps/perf-kvm-script.err" &&
	[ "$(count samples "$tmp/badmaps/perf-kvm-script.txt")" = \
	  "$(count samples "$demo/perf-kvm-script.txt")" ] &&
	grep -q do_syscall_64 "$tmp/badmaps/perf-kvm-script.txt"; then
	echo "ok: corrupt guest maps file: reported, every sample kept, guest kernel symbols resolved"
else
	echo "FAILED: corrupt guest maps file: no error from perf, or samples or kernel symbols lost"
	fail=1
fi

# The stock guest's sideband without its build-id cache: a note per
# missing file, its frames as addresses; the guest's processes still
# apart, by comm.
if [ -d "$demo/guest-data" ]; then
	mkdir "$tmp/nocache"
	cp -a "$demo/perf.data" "$demo/guest" "$demo/guestmount" "$demo/demo-guest" "$demo/guest-qemu.pid" \
		"$demo/guest-data" "$demo/guest-clock" "$tmp/nocache/"
	rm -rf "$tmp/nocache/guest-data/root/.debug"
	expect "guest build-id cache missing" 0 "drawing" bash "$TOP/demo/report.sh" "$tmp/nocache"
	if grep -q "Guest file /bin/ping: no file with its build id" "$tmp/nocache/perf-kvm-script.err" &&
		! grep -Eq "(ping|pong)_(stroke|volley|rally)" "$tmp/nocache/perf-kvm-script.txt" &&
		grep -q "^ *pong " "$tmp/nocache/perf-kvm-script.txt"; then
		echo "ok: guest build-id cache missing: reported per file, frames as addresses, processes apart"
	else
		echo "FAILED: guest build-id cache missing: no note, symbols from elsewhere, or no processes"
		sed 's/^/    | /' "$tmp/nocache/perf-kvm-script.err" | head -n 10
		fail=1
	fi

	# The guest's clock given an hour behind: no sample lands in the
	# sideband's time, so every one is the unknown guest thread's, none
	# is some process's by mistake.
	mkdir "$tmp/clock"
	cp -a "$demo/perf.data" "$demo/guest" "$demo/guestmount" "$demo/demo-guest" "$demo/guest-qemu.pid" \
		"$demo/guest-data" "$tmp/clock/"
	awk -F, '{ printf "%.0f,%s\n", $1 - 3600000000000, $2 }' "$demo/guest-clock" >"$tmp/clock/guest-clock"
	expect "guest clock an hour off" 0 "drawing" bash "$TOP/demo/report.sh" "$tmp/clock"
	if ! grep -Eq "^ *(ping|pong|workload) " "$tmp/clock/perf-kvm-script.txt" &&
		grep -q "^\[unknown guest thread\]" "$tmp/clock/perf-kvm-script.txt"; then
		echo "ok: guest clock an hour off: every sample the unknown guest thread's"
	else
		echo "FAILED: guest clock an hour off: samples given to guest processes"
		fail=1
	fi

	# The guest's clock given ahead, by 30 s or by as much as it takes for
	# the sideband to end a second before the samples start (the guest's
	# perf may record for longer than the host's on a slow machine): a
	# user space sample whose address the thread last switched to has no
	# mapping for is not that thread's: it is the unknown guest thread's.
	# (Guest kernel samples can't be checked so: they go to that thread,
	# see perf-kvm.txt.)
	mkdir "$tmp/ahead"
	cp -a "$tmp/clock/." "$tmp/ahead/"
	sideband_end=$("$PERF" script -i "$demo/guest-data/tmp/guest.data" --ns -F time \
		--show-switch-events --show-task-events --show-mmap-events 2>/dev/null |
		awk '{ t = $1 } END { sub(":", "", t); print t }')
	first_sample=$("$PERF" report -i "$demo/perf.data" --header-only 2>/dev/null |
		awk '/time of first sample/ { print $NF }')
	[ -n "$sideband_end" ] && [ -n "$first_sample" ] ||
		die "no times in $demo/guest-data/tmp/guest.data or $demo/perf.data"
	# perf inject: guest time = host time * scale + offset.
	awk -F, -v end="$sideband_end" -v first="$first_sample" '{
		off = end * 1e9 - (first - 1) * 1e9 * $2
		if (off < $1 + 30e9) off = $1 + 30e9
		printf "%.0f,%s\n", off, $2 }' "$demo/guest-clock" >"$tmp/ahead/guest-clock"
	ahead=$(paste -d, "$demo/guest-clock" "$tmp/ahead/guest-clock" | awk -F, '{ printf "%.0f", ($3 - $1) / 1e9 }')
	expect "guest clock ahead" 0 "drawing" bash "$TOP/demo/report.sh" "$tmp/ahead"
	misplaced=$(count placed_user "$tmp/ahead/perf-kvm-script.txt")
	if [ "$misplaced" = 0 ] && grep -q "^\[unknown guest thread\]" "$tmp/ahead/perf-kvm-script.txt"; then
		echo "ok: guest clock ahead ($ahead s): every guest user space sample the unknown guest thread's"
	else
		echo "FAILED: guest clock ahead: $misplaced guest user space samples given to guest processes"
		fail=1
	fi
fi

exit $fail
