#!/bin/sh
# A whole simulated year of hourly snapshot --auto, sync and prune on both
# sides (tests/cli/95-sync-year.t with 8760 hours instead of make check's
# 192): the retained sets must equal the independent model of restic's
# rules, every sync after the first be incremental, and the kept backup
# snapshots restore as the source had them. Minutes, not seconds:
#   FERRY=build/ferry FERRY_TOOLS=build/tools sh tests/torture/sync-year.sh [HOURS]
set -eu
here=$(cd "$(dirname "$0")/../.." && pwd)
SYNC_HOURS=${1:-8760} FERRY_SRC=$here exec prove -v "$here/tests/cli/95-sync-year.t"
