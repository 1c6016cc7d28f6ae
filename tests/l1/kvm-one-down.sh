#!/bin/bash
# make l1-kvm-down: the KVM-accelerated L1 path one level down by itself
# (make check runs it in its L1 suite, tests/l1/run.sh): L1 under TCG on
# a bench without VMX or SVM, tests/l1/kvm-down.sh in it.
set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
. "$TOP/scripts/lib.sh"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
bash "$TOP/scripts/l1-run.sh" -t 700 -n kvm-test bash "$TOP/tests/l1/kvm-down.sh" 2>&1 | tee "$out"
grep -q '^\[l1-run\] L1 under TCG' "$out" || grep -q '^\[l1-run\] L1 under KVM' "$out" ||
	{ echo "l1-run.sh did not say which accelerator L1 runs under"; exit 1; }
grep -q '^PASS l1/kvm-down' "$out"
