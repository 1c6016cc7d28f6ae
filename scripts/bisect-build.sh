#!/bin/bash
# Every patch must build on its own.  For each commit of the series, in a
# separate work tree (build/bisect):
#   - the kernel directories the series touches (KVM, perf events, BPF stack
#     maps; virt/kvm builds as part of arch/x86/kvm), with the test kernel's
#     .config;
#   - the KVM selftest library and guest_callchain_test, when the commit
#     touches tools/testing/selftests/kvm;
#   - perf, when the commit touches tools/perf (BISECT_PERF=0 skips this).
# Each output directory is reused from commit to commit, so a commit costs
# what it changes; ccache makes repeated runs cheap.
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

touches() { git -C "$TREE" diff --quiet "$1^" "$1" -- "$2" && return 1 || return 0; }

dirs="arch/x86/kvm/ arch/x86/events/ kernel/events/ kernel/bpf/"
n=0 selftest_builds=0 perf_builds=0
for commit in $(git -C "$TREE" rev-list --reverse base..series); do
	n=$((n + 1))
	subject=$(git -C "$TREE" log -1 --format=%s "$commit")
	git -C "$WT" checkout -q --detach "$commit"
	say "[$n] $subject"
	make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" olddefconfig >/dev/null
	make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" $dirs ||
		die "patch $n does not build: $subject"
	if touches "$commit" tools/testing/selftests/kvm; then
		selftests_make "$WT" "$SOBJ" "$SOBJ/x86_64/guest_callchain_test" \
			>"$SOBJ/build.log" 2>&1 || {
			tail -n 30 "$SOBJ/build.log"
			die "patch $n: the KVM selftests do not build: $subject"
		}
		selftest_builds=$((selftest_builds + 1))
	fi
	if [ "${BISECT_PERF:-1}" != 0 ] && touches "$commit" tools/perf; then
		perf_make "$WT" "$POBJ" >"$POBJ/build.log" 2>&1 || {
			tail -n 30 "$POBJ/build.log"
			die "patch $n: perf does not build: $subject"
		}
		perf_builds=$((perf_builds + 1))
	fi
done
say "all $n patches build on their own ($selftest_builds with the KVM selftests, $perf_builds with perf)"
