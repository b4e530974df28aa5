#!/bin/sh
# Issue 15's acceptance run: at least 1,000 random bit flips over many
# pools, every one reported by scrub with the right files, nothing false
# on the clean pools. It is tests/cli/152-scrub-flips.t with more pools
# (13 flips each: 10 blocks, 3 node rows of the catalogue), then
# tests/cli/158-scrub-flips-packs.t with more pools (9 flips each at
# uniformly random bytes of the pack files, and one each in the file
# headers, node records and checkpoint); `make torture-scrub` runs both.
#   FERRY=build/ferry sh tests/torture/scrub-flips.sh [POOLS [PACK_POOLS]]
#   (defaults 77: 1,001 flips; 112: 1,008 flips over whole packs)
d=$(dirname "$0")/../cli
SCRUB_POOLS=${1:-77} prove -v "$d/152-scrub-flips.t" || exit 1
SCRUB_PACK_POOLS=${2:-112} SCRUB_FLIPS=6 exec prove -v "$d/158-scrub-flips-packs.t"
