# Shared by every script of the harness (scripts/, bench/, demo/, tests/):
# the one owner of the paths, the perf binary, how to gain root, the pattern
# of a kernel report, logging and the stage timer.
# shellcheck shell=bash
TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$TOP/config/base.conf"
BUILD=${BUILD:-$TOP/build}
TREE=${TREE:-$BUILD/linux}		# the materialised work tree
OUT=${OUT:-$BUILD/out}			# results: $OUT/check, $OUT/l1/NAME
# What this host and perf's builds can do (scripts/host-caps.py), probed
# once per make check: the conditions of tests/expected's skips
HOST_CAPS=${HOST_CAPS:-$OUT/check/host-caps.txt}
# What built before, this checkout's record since tests/verified-builds
# (scripts/verified-builds.sh; scripts/bisect-build.sh reads and writes it)
VERIFIED_BUILDS=${VERIFIED_BUILDS:-$BUILD/verified-builds}
# The results of tests/expected that make check-host records, on a host
# booted into the series' kernel (scripts/check-host.sh; make check runs it
# inside L1), by their names' prefixes; make check records the rest.
CHECK_HOST_SCOPE=kvm/,kernel/perf/,qemu/,guest/
KBUILD=${KBUILD:-$BUILD/kbuild}		# the kernel's O= directory
BZIMAGE=${BZIMAGE:-$BUILD/bzImage}	# the test kernel, L1's and the demo guest's
PERFBUILD=${PERFBUILD:-$BUILD/perf}	# perf's O= directory
PERF=${PERF:-$PERFBUILD/perf}
QEMUDIR=${QEMUDIR:-$BUILD/qemu}		# L1's QEMU, built into root/ (scripts/qemu.sh)
L1_QEMU=${L1_QEMU:-$QEMUDIR/root/usr/bin/qemu-system-x86_64}
L1_QEMU_DATA=${L1_QEMU_DATA:-$QEMUDIR/root/usr/share}	# its firmware
GUEST_QEMU_DIR=${GUEST_QEMU_DIR:-$BUILD/guest-qemu}	# the guests' QEMU, with patches/qemu (scripts/guest-qemu.sh)
GUEST_QEMU=${GUEST_QEMU:-$GUEST_QEMU_DIR/root/usr/bin/qemu-system-x86_64}
KVM_GUEST_CALLCHAINS_TOOL=${KVM_GUEST_CALLCHAINS_TOOL:-$TOP/tools/kvm-guest-callchains/kvm_guest_callchains.py}	# opts a running VM in (tools/kvm-guest-callchains)
SELFTESTS=${SELFTESTS:-$BUILD/selftests/kvm}
BENCHBUILD=${BENCHBUILD:-$BUILD/bench}
NMI_SAMPLER=${NMI_SAMPLER:-$BUILD/nmi-sampler/nmi_sampler.ko}	# tests/nmi-sampler, built with the kernel
DEMOBUILD=${DEMOBUILD:-$BUILD/demo}
# Debian's stock cloud kernel (demo/stock-kernel.sh): the demo guest's, and
# the kernel image perf's ORC test reads
STOCK_KERNEL=${STOCK_KERNEL:-$DEMOBUILD/stock-kernel}
ORC_IMAGE=${ORC_IMAGE:-$BUILD/orc-image}	# Debian's cloud kernel of the base series (scripts/orc-image.sh)
NPMDIR=${NPMDIR:-$BUILD/npm}		# the demo's npm packages (demo/deps.sh)
FLAMEGRAPH_TEMPLATE=$NPMDIR/node_modules/d3-flame-graph/dist/templates/d3-flamegraph-base.html
export CCACHE_DIR=${CCACHE_DIR:-$BUILD/ccache}

# A kernel report in a log: WARNING, BUG, Oops, panic, lockdep, RCU, KASAN,
# UBSAN or KFENCE reports, hung tasks and stalls (grep -E).  A user task's
# crash ("traps: perf[1] general protection fault ip:...") is not one: the
# kernel's own faults come as an Oops.
KERNEL_REPORT='WARNING:|BUG:|kernel BUG at|Oops|Kernel panic|'
KERNEL_REPORT+='KASAN:|UBSAN:|KFENCE:|possible recursive locking|'
KERNEL_REPORT+='INFO: task .* blocked for more than|rcu: INFO:|self-detected stall|'
KERNEL_REPORT+='detected stalls on CPUs|Unable to handle kernel|watchdog: BUG|'
KERNEL_REPORT+='NMI received for unknown reason'

say() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*"; }
die() { printf '[%s] error: %s\n' "$(basename "$0" .sh)" "$*" >&2; exit 1; }

# Run a command as root: CI and the development machines are root, anyone
# else goes through sudo.
# The postable series of a patches directory (default patches/) in the order
# they apply, and their patches as NAME/FILE, cover letters aside.
series_names() { grep -v -e '^#' -e '^$' "${1:-$TOP/patches}/series" | awk '{ print $1 }'; }
series_patches() {
	local dir=${1:-$TOP/patches} name
	for name in $(series_names "$dir"); do
		grep -v -e '^#' -e '^$' -e '^0000-' "$dir/$name/series" | sed "s|^|$name/|"
	done
}
# The notes of a patch as 'git format-patch --notes' writes them below its
# '---' (history and bench notes, for the reader, not the changelog), or
# nothing: the text a commit's git note holds, so that 'make tree' gives
# the commit the note that 'make export' wrote.
patch_notes() {
	awk '
		state == 0 && /^---$/ { state = 1; next }
		state == 1 && /^$/ { state = 2; next }
		state == 2 && /^Notes:$/ { state = 3; next }
		state == 3 && /^    / { print substr($0, 5); next }
		state == 3 && /^$/ { exit }
		state > 0 { exit }
	' "$1"
}
# Apply patch $1 to the git tree in the current directory with 'git am', and
# give the commit the note its patch holds (patch_notes).
am_with_notes() {
	local notes
	git am -q --keep-cr "$1" || return 1
	notes=$(patch_notes "$1")
	[ -z "$notes" ] || git notes add -f -m "$notes" HEAD
}
# The series that series $1 needs to apply, and the series that need it.
series_needs() { awk -v s="$1" '!/^#/ && $1 == s { for (i = 2; i <= NF; i++) print $i }' "$TOP/patches/series"; }
series_needing() { awk -v s="$1" '!/^#/ { for (i = 2; i <= NF; i++) if ($i == s) print $1 }' "$TOP/patches/series"; }

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	else
		sudo "$@"
	fi
}

# The Debian archives the machine's apt sources use (deb822 .sources or
# one-line sources.list), a URI a line.
debian_archives() {
	local deb822 oneline
	deb822=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
	oneline=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true)
	{
		awk '/^URIs:/ { for (i = 2; i <= NF; i++) print $i }' <<<"$deb822"
		awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i !~ /^\[/ && $i !~ /\]$/ && $i !~ /=/) { print $i; break } }' <<<"$oneline"
	} | sed 's|/$||'
}
# The Debian archive, without its security archive; and the security
# archive (SUITE-security), the mirror's when the sources name none.
debian_mirror() { debian_archives | grep -v security | grep -E '/debian$' | head -n1 || true; }
debian_security_archive() {
	local uri
	uri=$(debian_archives | grep -E '/debian-security$' | head -n1 || true)
	[ -n "$uri" ] || uri=$(debian_mirror | sed 's|/debian$|/debian-security|')
	echo "$uri"
}

# apt with a sources list, lists and cache of its own under DIR: one suite
# of the machine's Debian mirror, to download packages from (never to
# install them), leaving the machine's apt state alone.
#   apt_suite_init DIR SUITE [deb-src]
#                                write DIR/sources.list and read the suite
#                                (a *-security suite from the security archive),
#                                its source packages too with deb-src
#   apt_suite DIR ARGS...        apt-get ARGS with that state
#   apt_suite_cache DIR ARGS...  apt-cache ARGS with that state
#   apt_suite_versions DIR PKG   the versions of PKG the suite serves
apt_suite() {
	local dir=$1
	shift
	apt-get -q -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=/dev/null \
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" \
		-o APT::Sandbox::User=root "$@"
}
apt_suite_init() {
	local dir=$1 suite=$2 src=${3:-} uri type
	case $suite in
	*-security) uri=$(debian_security_archive) ;;
	*) uri=$(debian_mirror) ;;
	esac
	[ -n "$uri" ] || die "no Debian mirror in the machine's apt sources (/etc/apt/sources.list*) to read $suite from"
	mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
	for type in deb $src; do
		echo "$type [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
	done >"$dir/sources.list"
	say "reading $suite from $uri"
	apt_suite "$dir" update >/dev/null || die "could not read $suite from $uri"
}
apt_suite_cache() {
	local dir=$1
	shift
	apt-cache -o Dir::Etc::sourcelist="$dir/sources.list" -o Dir::Etc::sourceparts=/dev/null \
		-o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" "$@"
}
apt_suite_versions() {
	apt_suite_cache "$1" madison "$2" | awk '{ print $3 }'
}

# Debian's QEMU source of a suite, the upstream tarball (orig.tar.xz) at
# the mirror path and SHA-256 its Sources index gives:
#   qemu_orig_tarball DIR SUITE PINNED
# reads SUITE's sources into DIR/apt, downloads the tarball of the version
# PINNED (else the newest, said) into DIR unless it is there already, and
# prints "VERSION TARBALL".
qemu_orig_tarball() {
	local dir=$1 suite=$2 pinned=$3 version directory orig sum
	apt_suite_init "$dir/apt" "$suite" deb-src >&2
	version=$(apt_suite_cache "$dir/apt" showsrc qemu | awk '/^Version:/ { print $2 }' | sort -V |
		pick_pinned "QEMU source of $suite" "$pinned") || die "$suite serves no QEMU source"
	read -r directory orig sum < <(apt_suite_cache "$dir/apt" showsrc qemu | awk -v want="$version" '
		/^$/ { if (v == want && o) print d, o, s; v = d = o = s = ""; p = 0; next }
		/^Version:/ { v = $2 } /^Directory:/ { d = $2 }
		/^Checksums-Sha256:/ { p = 1; next } /^[^ ]/ { p = 0 }
		p && $3 ~ /\.orig\.tar\.xz$/ { o = $3; s = $1 }
		END { if (v == want && o) print d, o, s }' | head -n1)
	[ -n "${sum:-}" ] || die "no upstream tarball listed for qemu $version in $suite"
	if ! { [ -s "$dir/$orig" ] && echo "$sum  $dir/$orig" | sha256sum -c --status; }; then
		say "downloading Debian's $orig (about 40 MB) from $suite" >&2
		python3 - "$(debian_mirror)/$directory/$orig" "$dir/$orig" <<'PY' || die "could not download $orig"
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=120) as r, open(sys.argv[2], "wb") as f:
    while chunk := r.read(1 << 20):
        f.write(chunk)
PY
		echo "$sum  $dir/$orig" | sha256sum -c --status ||
			die "$orig does not have the SHA-256 $suite's Sources index gives"
	fi
	echo "$version $dir/$orig"
}

# What building QEMU 10 and running its functional tests need beyond
# make deps' packages: meson >= 1.5 (Debian 12 has 1.0) and pycotap (not
# in Debian 12), from $L1_QEMU_SUITE (architecture-independent), unpacked
# into DIR unless they are there already:
#   qemu_build_tools DIR
# then PATH=DIR/usr/bin:$PATH PYTHONPATH=DIR/usr/lib/python3/dist-packages.
qemu_build_tools() {
	local dir=$1 p v debs=()
	[ -x "$dir/usr/bin/meson" ] && [ -d "$dir/usr/lib/python3/dist-packages/pycotap" ] && return 0
	rm -rf "$dir"
	mkdir -p "$dir/deb"
	apt_suite_init "$dir/apt" "$L1_QEMU_SUITE" >&2
	for p in meson python3-pycotap; do
		v=$(apt_suite_versions "$dir/apt" "$p" | head -n1)
		[ -n "$v" ] || die "$L1_QEMU_SUITE serves no $p"
		debs+=("$p=$v")
	done
	(cd "$dir/deb" && apt_suite "$dir/apt" download "${debs[@]}" >/dev/null) ||
		die "could not download ${debs[*]} from $L1_QEMU_SUITE"
	for p in "$dir"/deb/*.deb; do
		dpkg-deb -x "$p" "$dir"
	done
}

# A cover letter's text, as format-patch's branch description takes it:
# the subject without its prefix, a blank line, the text up to the
# shortlog (scripts/export.sh, scripts/guest-qemu.sh export); and its
# subject prefix (e.g. "PATCH v6").
cover_description() {
	awk '
		/^Subject: / { sub(/^Subject: \[[^]]*\] /, ""); subject = $0; folded = 1; next }
		folded && /^[ \t]/ { sub(/^[ \t]/, ""); subject = subject " " $0; next }
		{ folded = 0 }
		subject != "" && !body && /^$/ { body = 1; print subject; print ""; next }
		body && /^[^ ].* \([0-9]+\):$/ { exit }
		body { print }
	' "$1"
}
cover_prefix() { sed -n 's/^Subject: \[\(.*\) [0-9]*\/[0-9]*\] .*/\1/p' "$1"; }

# What config/base.conf pins, or the newest that is still served:
#   pick_pinned WHAT PINNED [PREFIX] <CANDIDATES
# prints the line of CANDIDATES (oldest first) that is PINNED (after
# PREFIX, a grep -E pattern), else the last one, with a warning on stderr
# that no reader misses (the results may then differ from the
# repository's); fails when there is none.  Every "pinned, else the
# newest" of the harness goes through here.
pick_pinned() {
	local what=$1 pinned=$2 prefix=${3:-} all got
	all=$(grep -v '^$' || true)
	[ -n "$all" ] || { echo "[$(basename "$0" .sh)] error: no $what is served at all" >&2; return 1; }
	got=$(grep -xE -- "$prefix$(sed 's/[][\.*^$+?(){}|]/\\&/g' <<<"$pinned")" <<<"$all" | tail -n 1 || true)
	if [ -z "$got" ]; then
		got=$(tail -n 1 <<<"$all")
		{
			echo "[$(basename "$0" .sh)] ======================================================================"
			echo "[$(basename "$0" .sh)] WARNING: the $what config/base.conf pins ($pinned) is no longer served;"
			echo "[$(basename "$0" .sh)] WARNING: using the newest, $got: results may differ from the repository's."
			echo "[$(basename "$0" .sh)] WARNING: update config/base.conf once make check passes with it."
			echo "[$(basename "$0" .sh)] ======================================================================"
		} >&2
	fi
	echo "$got"
}

# make perf from the kernel tree $1 into the O= directory $2, with the
# features we test (libelf, libdw, libtraceevent, python) and without the
# ones Debian's build machines lack; further arguments go to make.
perf_make() {
	local tree=$1 obj=$2
	shift 2
	# NO_LIBLLVM: perf disassembles with objdump then; the demo's guest
	# carries this perf and its libraries, and LLVM's are 160 MB.  Rust
	# as perf's defaults say (its test workload, where rustc is there:
	# perf-fixes' "tools build: Strip the LLVM bitcode of Rust static
	# libraries" lets Debian 12's ar archive it).
	make -s -C "$tree/tools/perf" O="$obj" -j"$(nproc)" CC="ccache gcc" \
		NO_LIBPERL=1 NO_LIBBABELTRACE=1 NO_LIBUNWIND=1 NO_SDT=1 NO_JVMTI=1 \
		NO_LIBPFM4=1 NO_LIBLLVM=1 BUILD_BPF_SKEL=0 PYTHON=/usr/bin/python3 "$@"
}

# perf as make packages ships it: what a distribution's perf has (BPF
# skeletons, built with clang; libtraceevent, libdw, libelf, python, perl,
# SDT markers, zstd, xz, numa, slang, libcap), not the cuts perf_make makes
# for the bench (it still leaves out LLVM, Rust, babeltrace, libpfm4 and
# the Java agent, which Debian's and Ubuntu's build machines need not have).
perf_package_make() {
	local tree=$1 obj=$2
	shift 2
	make -s -C "$tree/tools/perf" O="$obj" -j"$(nproc)" CC="ccache gcc" \
		BUILD_BPF_SKEL=1 LIBPERL=1 NO_LIBBABELTRACE=1 NO_JVMTI=1 NO_LIBPFM4=1 \
		NO_LIBLLVM=1 NO_RUST=1 PYTHON=/usr/bin/python3 "$@"
}

# The conditions of tests/expected that are the harness's own facts, not
# the host's (scripts/host-caps.py probes those), in its form.
harness_conditions() {
	# perf/host runs perf test without --dso (its Symbols test then reads
	# perf itself); perf/orc-* run the ORC image tests with kernels.
	printf 'perf-test-without-dso\tyes\t%s\n' \
		"perf/host runs perf test without --dso; perf/orc-stock-kernel and perf/orc-base-kernel with Debian's kernels"
	# perf version --build-options does not say SDT: perf_make does.
	if declare -f perf_make | grep -q 'NO_SDT=1'; then
		printf 'perf:without-sdt\tyes\tlib.sh perf_make: NO_SDT=1\n'
	else
		printf 'perf:without-sdt\tno\tlib.sh perf_make: no NO_SDT=1\n'
	fi
}

# The other ways perf is built, at the last perf patch (make check), where
# the choice of libraries can change the build, or at every perf patch
# (make bisect; bisect-build.sh's BISECT_VARIANTS), each with its guest
# tests run (all-tests.sh): noelf, without libelf, as perf's
# own tests/make make_no_libelf (no symbols from ELF files, no DWARF, no
# ORC); unwind, without libdw and with libunwind, so that its DWARF
# unwinder is libunwind's (since 7.3 perf links libunwind only when asked,
# LIBUNWIND=1; until then whenever it was installed, as Debian built perf).
PERF_VARIANTS="noelf unwind"
perf_variant_args() {
	case $1 in
	noelf) echo NO_LIBELF=1 ;;
	unwind) echo NO_LIBDW=1 NO_LIBUNWIND= LIBUNWIND=1 ;;
	*) die "no perf variant $1" ;;
	esac
}

# make KVM selftests from the kernel tree $1 into $2, against our kernel's
# headers, guest code with frame pointers; further arguments (the test
# binaries, as paths under $2) go to make.
selftests_make() {
	local tree=$1 obj=$2
	shift 2
	make -s -C "$tree/tools/testing/selftests/kvm" -j"$(nproc)" CC="ccache gcc" \
		OUTPUT="$obj" KHDR_INCLUDES="-isystem $KBUILD/usr/include" \
		EXTRA_CFLAGS="-fno-omit-frame-pointer" "$@"
}

# This machine's TSC rate in kHz, as its kernel measured it (empty when
# it doesn't say): L1 runs on it (scripts/l1-run.sh).  The kernel's log is
# root's on Debian (kernel.dmesg_restrict): a user who can't read it is
# told, on stderr, what that costs.
host_tsc_khz() {
	local mhz log denied=
	log=$(dmesg 2>&1) || { denied=${log##*$'\n'}; log=; }
	mhz=$(printf '%s\n' "$log" |
		sed -n -e 's/.*Refined TSC clocksource calibration: \([0-9]*\.[0-9]*\) MHz.*/\1/p' \
			-e 's/.*tsc: Detected \([0-9]*\.[0-9]*\) MHz processor.*/\1/p' | tail -n 1)
	if [ -z "$mhz" ] && grep -qw tsc_known_freq "${CPUINFO:-/proc/cpuinfo}"; then
		mhz=$(sed -n 's/^cpu MHz[[:space:]]*: \([0-9]*\.[0-9]*\)$/\1/p' "${CPUINFO:-/proc/cpuinfo}" | head -n 1)
	fi
	if [ -z "$mhz" ] && [ -n "$denied" ]; then
		echo "[$(basename "$0" .sh)] warning: can't read the kernel log ($denied), and the CPU does not say its TSC rate: L1 calibrates its TSC itself, which on a busy machine can stall its guests' timers; run as root or set kernel.dmesg_restrict=0" >&2
	fi
	[ -n "$mhz" ] || return 0
	awk -v m="$mhz" 'BEGIN { printf "%d\n", m * 1000 + 0.5 }'
}

# How L1 runs (scripts/l1-run.sh): "kvm" where this host has /dev/kvm and
# nested virtualization (VMX or SVM in its CPU's flags: L1 then runs VMX
# or SVM in hardware, and the host's PMU), else "tcg" (QEMU emulates AMD
# SVM).  L1_ACCEL=tcg|kvm chooses.  Prints ACCEL<TAB>WHY; CPUINFO and
# KVM_DEV stand for /proc/cpuinfo and /dev/kvm (the harness's tests).
l1_accel() {
	local cpuinfo=${CPUINFO:-/proc/cpuinfo} dev=${KVM_DEV:-/dev/kvm} virt
	case ${L1_ACCEL:-} in
	kvm|tcg) printf '%s\t%s\n' "$L1_ACCEL" "L1_ACCEL=$L1_ACCEL"; return 0 ;;
	'') ;;
	*) die "L1_ACCEL=$L1_ACCEL: tcg or kvm" ;;
	esac
	virt=$(grep -m 1 -owE 'vmx|svm' "$cpuinfo" | head -n 1 || true)
	if [ -z "$virt" ]; then
		printf 'tcg\t%s\n' "this host's CPU has no vmx or svm flag (no nested virtualization): QEMU emulates AMD SVM"
	elif [ ! -r "$dev" ] || [ ! -w "$dev" ]; then
		printf 'tcg\t%s\n' "this host's CPU has $virt, but $dev is not there to read and write: QEMU emulates AMD SVM"
	else
		printf 'kvm\t%s\n' "this host has $dev and $virt: L1 runs ${virt^^} in hardware, with the host's PMU if it has one"
	fi
}

# The options of the scripts that run a command on our kernel in a
# machine of its own (scripts/l1-run.sh, scripts/bochs-run.sh):
#   run_options DEFAULT_SECONDS "$@"
# reads [-t SECONDS] [-n NAME] COMMAND [ARG...] into timeout, name and
# the array command.
run_options() {
	local OPTIND opt usage="usage: $0 [-t SECONDS] [-n NAME] COMMAND [ARG...]"
	timeout=$1 name=run
	shift
	while getopts t:n: opt; do
		case $opt in
		t) timeout=$OPTARG ;;
		n) name=$OPTARG ;;
		*) die "$usage" ;;
		esac
	done
	shift $((OPTIND - 1))
	[ $# -gt 0 ] || die "$usage"
	command=("$@")
}

# command_script DIR: a sh script that runs the array command in DIR.
command_script() {
	printf 'cd %q || exit 125\n' "$1"
	printf 'exec'
	printf ' %q' "${command[@]}"
	printf '\n'
}

# Run one named stage and print how long it took; with $STAGE_TIMES set,
# also append "NAME<TAB>SECONDS<TAB>done|FAILED" to that file (make
# check's stage-time table).
stage() {
	local name=$1 start rc=0 verdict
	local -x STAGE_NAME=$1
	shift
	start=$(date +%s)
	printf '=== stage %s: start\n' "$name"
	"$@" || rc=$?
	verdict=$([ $rc -eq 0 ] && echo done || echo FAILED)
	printf '=== stage %s: %s in %ds\n' "$name" "$verdict" $(($(date +%s) - start))
	[ -z "${STAGE_TIMES:-}" ] ||
		printf '%s\t%d\t%s\n' "$name" $(($(date +%s) - start)) "$verdict" >>"$STAGE_TIMES"
	return $rc
}

# A line the stage running now adds to make check's stage table (what it
# took from a cache, say): $STAGE_NOTES, when make check sets it.
stage_note() {
	say "$*"
	[ -z "${STAGE_NOTES:-}" ] || printf '%s\t%s\n' "${STAGE_NAME:-?}" "$*" >>"$STAGE_NOTES"
}

# Configure the O= directory $1 as tinyconfig plus the fragment $2 with the
# kernel's merge_config.sh, running the remaining arguments as the make
# command.  merge_config.sh only warns about options it drops: fail instead.
# Redone only when the fragment changes.
merge_fragment() {
	local obj=$1 frag=$2 line bad=0
	shift 2
	sha1sum -c --status "$obj/.fragment.sha" 2>/dev/null && [ -f "$obj/.config" ] && return 0
	say "configuring $obj: tinyconfig + ${frag#"$TOP"/}"
	"$@" tinyconfig >/dev/null
	"$TREE/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$frag" >/dev/null
	"$@" olddefconfig >/dev/null
	while IFS= read -r line; do
		case "$line" in CONFIG_*=*) ;; *) continue ;; esac
		grep -qxF "$line" "$obj/.config" || { say "config option not set: $line"; bad=1; }
	done <"$frag"
	[ $bad -eq 0 ] || die "${frag#"$TOP"/} did not survive the merge"
	sha1sum "$frag" >"$obj/.fragment.sha"
}
