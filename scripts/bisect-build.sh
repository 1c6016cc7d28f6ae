#!/bin/bash
# Every patch must build on its own.  For each commit of the series, in a
# separate work tree (build/bisect) with the test kernel's .config, build the
# kernel directories the series touches (KVM, perf, BPF stack maps; virt/kvm
# builds as part of arch/x86/kvm).  The perf tools and the selftests are not
# built per patch here.  ccache makes repeated runs cheap.
set -euo pipefail
. "$(dirname "$0")/lib.sh"

KBUILD=${KBUILD:-$BUILD/kbuild}
WT=$BUILD/bisect
OBJ=$BUILD/bisect-obj
[ -f "$KBUILD/.config" ] || die "no $KBUILD/.config: build the kernel first"

# A work tree left over from an earlier build/linux is useless: start anew.
if ! git -C "$WT" rev-parse -q --verify HEAD >/dev/null 2>&1 ||
	[ "$(git -C "$WT" rev-parse --git-common-dir)" != "$(git -C "$TREE" rev-parse --absolute-git-dir)" ]; then
	say "creating work tree $WT"
	rm -rf "$WT"
	git -C "$TREE" worktree prune
	git -C "$TREE" worktree add -q --detach "$WT" base
fi
mkdir -p "$OBJ"
cp "$KBUILD/.config" "$OBJ/.config"

dirs="arch/x86/kvm/ arch/x86/events/ kernel/events/ kernel/bpf/"
n=0
for commit in $(git -C "$TREE" rev-list --reverse base..series); do
	n=$((n + 1))
	subject=$(git -C "$TREE" log -1 --format=%s "$commit")
	git -C "$WT" checkout -q --detach "$commit"
	say "[$n] $subject"
	make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" olddefconfig >/dev/null
	make -s -C "$WT" O="$OBJ" CC="ccache gcc" -j"$(nproc)" $dirs ||
		die "patch $n does not build: $subject"
done
say "all $n patches build on their own"
