#!/bin/sh
# pool upgrade (issue 15, item 3): a pool of format version 1 (made by
# ferry 9739357: tests/cli/pool-v1.tar.gz, with two filesystems, a
# child, a volume, a received dataset, a hold, a bookmark, local and
# received properties) keeps opening and working as before; recover
# refuses it (its packs hold no records); `pool upgrade` writes the
# records it lacks, after which recover rebuilds it from the packs alone.
. "$(dirname "$0")/lib.sh"

P=$T/p/old
mkdir -p "$P"
tar -C "$P" -xzf "$FERRY_SRC/tests/cli/pool-v1.tar.gz"
chmod -R go= "$P"
run ferry pool import "$P" tank
is "$rc" 0 "a version-1 pool imports"
like "$(ferry pool status tank)" "format: 1" "pool status says format 1"

. "$FERRY_SRC/tests/cli/recover_lib.sh"

# still works as a version-1 pool: a new snapshot writes no records
mkdir -p "$T/src"
echo "new in v1" >"$T/src/f"
run ferry snapshot --from "$T/src" tank/fs@c
is "$rc" 0 "a version-1 pool takes a snapshot"
is "$(ls "$P/packs" | grep -c '^r')" 0 "... and writes no checkpoint"
newest=$(ls -t "$P/packs" | head -1)
is "$(head -c 12 "$P/packs/$newest" | od -An -tx1 | tr -d ' \n')" "4652595041434b3101000000" "... its new pack is of version 1"
run ferry pool recover -n tank
is "$rc" 1 "recover refuses a version-1 pool"
like "$(tail -1 "$T/err")" "no checkpoint of its catalogue in the packs \(a version-1 pool has none: 'ferry pool upgrade' while its catalogue is good\)" "... and says to upgrade it"

state >"$T/before.state"
restore_all "$TS/before"
is "$?" 0 "every snapshot of the version-1 pool restores"
like "$(cat "$T/before.state")" "tank/rcv	user:note	v1	received" "a received property is in the state compared"

run ferry pool upgrade tank
is "$rc" 0 "pool upgrade: exit 0"
is "$(cat "$T/out")" "pool 'tank' upgraded from format version 1 to 2" "pool upgrade says what it did"
is "$(cat "$P/ferry.pool")" "ferry pool format 2" "the marker says format 2"
like "$(ferry pool status tank)" "format: 2" "pool status says format 2"
is "$(state)" "$(cat "$T/before.state")" "the upgrade changes no dataset, snapshot, hold or property"
run ferry pool upgrade tank
is "$(cat "$T/out")" "pool 'tank' is already at format version 2" "a second upgrade has nothing to do"

rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
run ferry pool recover tank
is "$rc" 0 "recover after the upgrade: exit 0"
is "$(state)" "$(cat "$T/before.state")" "recover gives back every dataset, snapshot, bookmark, hold and property"
same_restores >"$T/cmp.out" 2>&1
is "$?" 0 "every snapshot restores byte for byte as before"
[ -s "$T/cmp.out" ] && diag "$(head -3 "$T/cmp.out")"
run ferry gc tank
is "$rc" 0 "gc after recover"
is "$(state)" "$(cat "$T/before.state")" "after gc, the same listings and space figures"
same_restores >/dev/null 2>&1
is "$?" 0 "after gc, every snapshot restores as before"

# what comes after the upgrade is recovered too
echo "after" >"$T/src/g"
ferry snapshot --from "$T/src" tank/fs@d && ferry hold h tank/fs@d
state >"$T/s2"
rm -f "$P/catalog.db" "$P/catalog.db-wal" "$P/catalog.db-shm"
run ferry pool recover tank
is "$rc" 0 "recover after a snapshot of the upgraded pool"
is "$(state)" "$(cat "$T/s2")" "... gives it back with its hold"
done_testing
