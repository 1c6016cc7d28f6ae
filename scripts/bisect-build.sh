#!/bin/bash
# Every patch must build on its own.  For each commit of the series, in a
# separate work tree (build/bisect):
#   - the kernel directories the series touches (KVM, perf events, BPF stack
#     maps; virt/kvm builds as part of arch/x86/kvm), with the test kernel's
#     .config, at the first commit and at those that change more than tools
#     and documentation;
#   - the KVM selftest library and those of tests/l1/kvm-selftests that the
#     commit has, when it touches tools/testing/selftests/kvm;
#   - perf without Python scripting, when the commit touches perf's C or
#     build files (BISECT_PERF=0 skips this): build-perf.sh builds and
#     checks the whole of perf, Python included, at the last commit;
#   - perf's other builds (lib.sh's PERF_VARIANTS: without libelf, without
#     libdw), each as dear as the first: by BISECT_VARIANTS,
#       none     never (make check: build-perf.sh builds them at the last
#                commit, where make check tests them);
#       changed  where the choice of libraries can change what builds: a
#                commit that touches perf's Build files or Makefiles, or a
#                file that tests a library's feature macro
#                (HAVE_LIBELF_SUPPORT, HAVE_DWARF_SUPPORT, ...);
#       all      at every commit that touches perf (make bisect).
# Each output directory is reused from commit to commit, so a commit costs
# what it changes; ccache makes repeated runs cheap.
#
# tests/verified-builds records the commits that built, each by a key: its
# tree and its parent's (what it is and what it changes), the test
# kernel's .config (compiler versions included), the build functions of
# lib.sh, this script and the selftests built.  With BISECT_VARIANTS=none
# (make check) a commit whose key is there is not built again: the same
# inputs built before.  make bisect builds every commit whatever the record
# says.  The record is rewritten with the keys of this series' commits:
# commit it with the series.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

WT=$BUILD/bisect
OBJ=$BUILD/bisect-obj
SOBJ=$BUILD/bisect-selftests
POBJ=$BUILD/bisect-perf
[ -f "$KBUILD/.config" ] || die "no $KBUILD/.config: build the kernel first"

# A work tree left over from an earlier build/linux is useless: start anew.
if ! git -C "$WT" rev-parse -q --verify HEAD >/dev/null 2>&1 ||
	[ "$(git -C "$WT" rev-parse --git-common-dir)" != "$(git -C "$TREE" rev-parse --absolute-git-dir)" ]; then
	say "creating work tree $WT"
	rm -rf "$WT"
	git -C "$TREE" worktree prune
	git -C "$TREE" worktree add -q --detach "$WT" base
fi
mkdir -p "$OBJ" "$SOBJ" "$POBJ"
cp "$KBUILD/.config" "$OBJ/.config"

# Whether commit $1 changes any of the paths (git pathspecs) that follow.
touches() {
	local commit=$1
	shift
	! git -C "$TREE" diff --quiet "$commit^" "$commit" -- "$@"
}

dirs="arch/x86/kvm/ arch/x86/events/ kernel/events/ kernel/bpf/"
perf_paths=(':(glob)tools/perf/**/*.[ch]' ':(glob)tools/perf/**/Build'
	':(glob)tools/perf/**/Makefile*' ':(glob)tools/perf/**/*.mak')
# The last commit that touches perf: its other builds are made there with
# BISECT_VARIANTS=changed.
last=$(git -C "$TREE" rev-list -1 base..series -- "${perf_paths[@]}")

variants=${BISECT_VARIANTS:-none}
case $variants in
none | changed | all) ;;
*) die "BISECT_VARIANTS must be none, changed or all, not '$variants'" ;;
esac
verified=${VERIFIED_BUILDS:-$TOP/tests/verified-builds}
touch "$verified"
# What every commit's key shares: how it is built.
env_key=$( {
	cat "$OBJ/.config"
	declare -f perf_make selftests_make perf_variant_args
	cat "$0" "$TOP/tests/l1/kvm-selftests"
} | sha1sum | cut -d' ' -f1)
# The key of commit $1 (see above).
commit_key() {
	echo "$(git -C "$TREE" rev-parse "$1^^{tree}" "$1^{tree}" | tr '\n' ' ')$env_key" |
		sha1sum | cut -d' ' -f1
}
keys=$(mktemp)
trap 'rm -f "$keys"' EXIT

# Whether perf's other builds are made at commit $1 (see above).
variants_needed() {
	local commit=$1 file
	[ "$variants" = all ] || [ "$commit" = "$last" ] && [ "$variants" != none ] && return 0
	[ "$variants" = changed ] || return 1
	while read -r file; do
		case $file in
		*/Build | */Makefile* | *.mak) return 0 ;;
		esac
		git -C "$TREE" show "$commit:$file" 2>/dev/null |
			grep -qE 'HAVE_(LIBELF|DWARF|LIBDW|LIBUNWIND)|CONFIG_(LIBELF|DWARF|LIBDW|LIBUNWIND)' &&
			return 0
	done < <(git -C "$TREE" diff --name-only "$commit^" "$commit" -- "${perf_paths[@]}")
	return 1
}
mapfile -t selftests < <(grep -v -e '^#' -e '^$' "$TOP/tests/l1/kvm-selftests")
n=0 kernel_builds=0 selftest_builds=0 perf_builds=0 variant_builds=0 known=0
for commit in $(git -C "$TREE" rev-list --reverse base..series); do
	n=$((n + 1))
	subject=$(git -C "$TREE" log -1 --format=%s "$commit")
	key=$(commit_key "$commit")
	echo "bisect $key $subject" >>"$keys"
	if [ "$variants" = none ] && grep -q "^bisect $key " "$verified"; then
		say "[$n] built before, as tests/verified-builds says: $subject"
		known=$((known + 1))
		continue
	fi
	git -C "$WT" checkout -q --detach "$commit"
	say "[$n] $subject"
	# The first commit, and every commit that changes more than tools and
	# documentation: the kernel directories.
	if [ $n -eq 1 ] || touches "$commit" ':!tools/' ':!Documentation/'; then
		make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" olddefconfig >/dev/null
		# shellcheck disable=SC2086
		make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" $dirs ||
			die "patch $n does not build: $subject"
		kernel_builds=$((kernel_builds + 1))
	fi
	if touches "$commit" tools/testing/selftests/kvm; then
		# The library, and those of our L1 selftests this commit has.
		targets=()
		for t in "${selftests[@]}"; do
			[ ! -f "$WT/tools/testing/selftests/kvm/$t.c" ] || targets+=("$SOBJ/$t")
		done
		selftests_make "$WT" "$SOBJ" "${targets[@]}" >"$SOBJ/build.log" 2>&1 || {
			tail -n 30 "$SOBJ/build.log"
			die "patch $n: the KVM selftests do not build: $subject"
		}
		selftest_builds=$((selftest_builds + 1))
	fi
	if [ "${BISECT_PERF:-1}" != 0 ] && touches "$commit" "${perf_paths[@]}"; then
		perf_make "$WT" "$POBJ" NO_LIBPYTHON=1 >"$POBJ/build.log" 2>&1 || {
			tail -n 30 "$POBJ/build.log"
			die "patch $n: perf does not build: $subject"
		}
		perf_builds=$((perf_builds + 1))
		variants_needed "$commit" || continue
		variant_builds=$((variant_builds + 1))
		for v in $PERF_VARIANTS; do
			mkdir -p "$POBJ-$v"
			# shellcheck disable=SC2046
			perf_make "$WT" "$POBJ-$v" NO_LIBPYTHON=1 $(perf_variant_args "$v") \
				>"$POBJ-$v/build.log" 2>&1 || {
				tail -n 30 "$POBJ-$v/build.log"
				die "patch $n: perf does not build $v ($(perf_variant_args "$v")): $subject"
			}
		done
	fi
done
# Every commit built (here or before, with the same key): the record is
# this series' keys, beside what else it holds.
{
	grep -v '^bisect ' "$verified" || true
	cat "$keys"
} >"$verified.new"
mv "$verified.new" "$verified"
say "all $n patches build on their own (built before, same key: $known; built now: the kernel directories at $kernel_builds, the KVM selftests at $selftest_builds, perf at $perf_builds, also as $PERF_VARIANTS at $variant_builds)"
