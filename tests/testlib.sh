# Shared by the harness's own tests (tests/harness/, tests/demo/): lib.sh, a
# scratch directory $tmp removed at exit, and ok and bad, which print a
# line each; bad makes the test fail at its end (exit $fail).
# shellcheck shell=bash
. "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
ok() { echo "ok: $*"; }
bad() { echo "FAILED: $*"; fail=1; }
