#!/bin/bash
# Check what 'make demo DEMO_GUESTS=2|3' wrote to OUTDIR: several VMs
# recorded at once (OUTDIR/vms: NAME GUEST LEVEL QEMU-PID VCPUS), told apart.
#   - a good recording (demo/recording-check.sh), and each VM's share of
#     the guest samples;
#   - the VM that did not opt in: every sample has the guest's instruction
#     pointer, resolved in its own files, and no other guest frame;
#   - each opted-in VM: the samples in its programs' hot leaves reach
#     their main, under that VM and, where the VM's sideband tells its
#     processes apart, under that program, on each of its vCPUs;
#   - no sample has a frame resolved in another VM's files: its guest
#     kernel is its VM's ([guest.kernel.kallsyms.PID]), its files are
#     under its VM's guestmount/PID, or, for a VM with a sideband, the
#     files of that VM's build-id cache;
#   - few of a sideband VM's samples on the unknown guest thread;
#   - the flame graph's first level is the VMs, each by its QEMU's process
#     name and PID, and the ten hottest stacks say which VM.
# The bounds, and what they were set from, are in demo/thresholds.conf;
# the checks are demo/checks.py's.  What it counted per VM is left in
# OUTDIR/vms-check.txt.
#
#   demo/check-vms.sh OUTDIR
set -euo pipefail
. "$(dirname "$0")/../scripts/lib.sh"

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
exec python3 "$TOP/demo/checks.py" vms "$1"
