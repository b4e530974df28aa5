#!/bin/sh
# A receive leaves little of what it wrote in the page cache: as each pack
# is fsynced (early, every 32 MiB, and at the commit) its pages are let go
# (store_writer_drop_cache), so a backup server receiving terabytes does
# not push its users' files out of memory for data nobody reads soon.
# Measured with fincore(1) on the packs a 48 MiB receive wrote. On a
# tmpfs the pages are the data and cannot go: the count is skipped there.
# Ends with after_check against a pool that got the same snapshot.
. "$(dirname "$0")/lib.sh"
PRNG="$FERRY_TOOLS/prng"
MB=1048576
mkdir -p "$T/src" "$T/p"
"$PRNG" bin 7 $((48 * MB)) >"$T/src/big"
ferry pool create -o compression=off tank "$T/p/tank"
ferry create -o source="$T/src" tank/fs
ferry snapshot tank/fs@a
ferry send tank/fs@a >"$T/a.s"
ferry pool create -o compression=off bk "$T/p/bk"
run sh -c "'$FERRY' recv bk/fs <'$T/a.s'"
is "$rc" 0 "a 48 MiB stream is received"
if [ "$(stat -f -c %T "$T/p/bk/packs")" = tmpfs ] || ! command -v fincore >/dev/null; then
	ok "# SKIP the packs are on a tmpfs, or no fincore"
else
	res=$(fincore --bytes --noheadings --output RES "$T/p/bk/packs/"*.pack | awk '{ s += $1 } END { print s + 0 }')
	size=$(du -cb "$T/p/bk/packs/"*.pack | tail -1 | cut -f1)
	if [ "$size" -gt $((48 * MB)) ] && [ "$res" -lt $((4 * MB)) ]; then
		ok "of the $size bytes of packs the receive wrote, $res are left in the page cache"
	else
		not_ok "the receive's packs left the page cache"
		diag "$res of $size bytes cached"
	fi
fi
ferry pool create -o compression=off ctl "$T/p/ctl"
ferry send tank/fs@a | ferry recv ctl/fs
after_check "$@" bk ctl "a received snapshot whose packs left the page cache"
done_testing
