#!/bin/sh
# tests/diskfull/run.sh — the disk-full torture: tests/cli/61-diskfull.t
# with DISKFULL_RUNS rounds (default 7) on each of its filesystems (ext4
# with 1 KiB and 4 KiB blocks, tmpfs), each round a receive and a capture
# larger than the space cut at a random point by ENOSPC. Prints the runs,
# the failures and the time; exits non-zero on any failure.
#   FERRY=build/ferry FERRY_TOOLS=build/tools sh tests/diskfull/run.sh [RUNS]
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
RUNS=${1:-${DISKFULL_RUNS:-7}}
export FERRY="${FERRY:-$SRC/build/ferry}" FERRY_TOOLS="${FERRY_TOOLS:-$SRC/build/tools}"
export FERRY_SRC="$SRC" DISKFULL_RUNS="$RUNS"
log=$(mktemp "${TMPDIR:-/tmp}/ferry-diskfull.XXXXXX")
t0=$(date +%s)
sh "$SRC/tests/cli/61-diskfull.t" >"$log" 2>&1
rc=$?
t1=$(date +%s)
fs=$(grep -c "^ok .* receives and captures larger than the space\|^not ok .* receives and captures larger than the space" "$log")
skipped=$(grep -c "# skip" "$log")
failed=$(grep -c "^not ok" "$log")
grep "^not ok\|^# " "$log" | head -40
echo "diskfull: $((fs * RUNS)) runs ($RUNS on each of $fs filesystems, a receive and a capture each), $failed failures, $skipped skipped, $((t1 - t0)) s"
rm -f "$log"
[ "$rc" = 0 ] && [ "$failed" = 0 ] && [ "$fs" -gt 0 ]
