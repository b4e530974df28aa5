#!/bin/sh
# Issue 15's acceptance run: at least 1,000 random bit flips over many
# pools, every one reported by scrub with the right files, nothing false
# on the clean pools. It is tests/cli/152-scrub-flips.t with more pools
# (13 flips each: 10 blocks, 3 nodes); `make torture-scrub` runs it.
#   FERRY=build/ferry sh tests/torture/scrub-flips.sh [POOLS]   (default 77: 1,001 flips)
SCRUB_POOLS=${1:-77} exec prove -v "$(dirname "$0")/../cli/152-scrub-flips.t"
