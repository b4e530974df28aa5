#!/bin/sh
# Follows OpenZFS tests/zfs-tests/tests/functional/cli_root/zfs_bookmark/
# zfs_bookmark_cliargs.ksh: a bookmark's source and name may each be given
# short (@snap, #book: in the other name's dataset), but one of the two
# must be whole and both names valid; a bookmark copied from a bookmark is
# independent of it and serves as an incremental base. (Clones and
# redaction bookmarks, which ferry does not have, are left out.) After gc
# the pool equals a control that got the same snapshots and bookmarks.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/s"
seq 1 3000 >"$T/s/f"
ferry pool create tank "$T/p/tank"
ferry pool create ctl "$T/p/ctl"
ferry create -o source="$T/s" tank/testfs
DS=tank/testfs
ferry snapshot "$DS@snapshot"
bm() { ferry list -H -t bookmark -o name -r tank | tr '\n' ' '; }

for args in "$DS@snapshot $DS#bookmark" "@snapshot $DS#bookmark" "$DS@snapshot #bookmark"; do
	# shellcheck disable=SC2086
	run ferry bookmark $args
	is "$rc:$(cat "$T/err"):$(bm)" "0::$DS#bookmark " "bookmark $args"
	ferry destroy "$DS#bookmark"
done
n=0
for args in "@snapshot|#bookmark" "snapshot|#bookmark" "@snapshot|bookmark" "snapshot|bookmark" \
	"snapshot|$DS#bookmark" "$DS|bookmark" "$DS@|bookmark" "$DS|#bookmark" "$DS@|#bookmark" \
	"$DS@snapshot|bookmark" "@|#bookmark" "@|#" "@snapshot|#" "@snapshot|$DS#" \
	"@snapshot|$DS" "snapshot|$DS#" "snapshot|$DS"; do
	run ferry bookmark "${args%%|*}" "${args#*|}"
	if [ "$rc" -ne 0 ] && [ "$(wc -l <"$T/err")" = 1 ]; then n=$((n + 1)); else
		diag "bookmark ${args%%|*} ${args#*|}: rc=$rc $(cat "$T/err")"; fi
done
is "$n" 17 "the 17 invalid argument pairs are refused, one line each"
is "$(bm)" "" "and make no bookmark"

ferry create -o source="$T/s" tank/testfs_two
refused 1 "must be in the dataset of its source" "a bookmark in another dataset is refused" \
	ferry bookmark "$DS@snapshot" tank/testfs_two#bookmark
ferry destroy tank/testfs_two
ferry snapshot tank@snapshot
run ferry bookmark tank@snapshot tank#bookmark
is "$rc" 0 "a bookmark of the pool's root dataset"
ferry destroy tank#bookmark
ferry destroy tank@snapshot

# copies
ferry bookmark "$DS@snapshot" "$DS#bookmark"
run ferry bookmark "$DS#bookmark" "$DS#bookmark_copy"
is "$rc:$(bm)" "0:$DS#bookmark $DS#bookmark_copy " "a bookmark copied from a bookmark"
ferry destroy "$DS#bookmark"
is "$(bm)" "$DS#bookmark_copy " "the copy stays when its source goes"
ferry destroy "$DS#bookmark_copy"
ferry bookmark "$DS@snapshot" "$DS#bookmark"
run ferry bookmark "#bookmark" "$DS#bookmark_copy"
is "$rc:$(cat "$T/err"):$(bm)" "0::$DS#bookmark $DS#bookmark_copy " "copy with the short source name"
ferry destroy "$DS#bookmark_copy"
run ferry bookmark "$DS#bookmark" "#bookmark_copy"
is "$rc:$(bm)" "0:$DS#bookmark $DS#bookmark_copy " "copy with the short bookmark name"
ferry destroy "$DS#bookmark_copy"
n=0
for args in "#bookmark|#bookmark_copy" "#bookmark|#" "#|#bookmark_copy" "#|#" "#|" "|#" "|"; do
	run ferry bookmark "${args%%|*}" "${args#*|}"
	[ "$rc" -ne 0 ] && n=$((n + 1)) || diag "bookmark '${args%%|*}' '${args#*|}' was accepted"
done
is "$n" 7 "two short names, or empty ones, are refused"
is "$(bm)" "$DS#bookmark " "and make nothing"

# a copied bookmark is a base of its own
ferry bookmark "$DS#bookmark" "$DS#bookmark_copy"
ferry destroy "$DS#bookmark"
ferry send "$DS@snapshot" | ferry recv tank/testfs/recv
seq 1 5000 >"$T/s/g"
ferry snapshot "$DS@snapshot2"
ferry send -i "#bookmark_copy" "$DS@snapshot2" >"$T/incr"
run sh -c "'$FERRY' recv tank/testfs/recv <'$T/incr'"
is "$rc:$(cat "$T/err")" "0:" "an incremental from the copied bookmark is received"


ferry send "$DS@snapshot" | ferry recv ctl/testfs
ferry send -i @snapshot "$DS@snapshot2" | ferry recv ctl/testfs
ferry bookmark ctl/testfs@snapshot ctl/testfs#bookmark_copy
ferry send "$DS@snapshot" | ferry recv ctl/testfs/recv
ferry recv ctl/testfs/recv <"$T/incr"
after_check tank ctl "bookmarks"
done_testing
