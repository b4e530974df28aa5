#!/bin/sh
# The census (store/census.c, docs/ferry-nodes.md): each dataset's
# reference counts of its newest tree, which tell an incremental snapshot
# or receive whether a block a change let go of is still named elsewhere
# in the tree, without walking it (issue 14). This checks when the census
# exists and which tree it describes: none after a full snapshot; built by
# the first incremental that changes anything (before the walks that then
# skip what the two trees share); moved along by every later
# snapshot, capture and receive; following the newest snapshot left when
# the newest is destroyed or rolled back (recv -F too); dropped, not
# trusted, when its rows prove wrong. Blocks a change let go of while
# another file (an unchanged duplicate, a record of a big file) still
# holds them must survive gc. It ends with after_check against pools that
# received the same snapshots in one go. tests/unit/test_lifetimes checks
# the counts themselves against a walk of the tree after random histories.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p"
S="$TS/src"
ferry pool create tank "$T/p/tank"
ferry pool create -o compression=gzip-7 bk "$T/p/bk"

mkdir -p "$S"
for d in 0 1 2; do
	mkdir -p "$S/d$d"
	for f in 0 1 2 3 4 5 6 7 8 9; do
		echo "file $d $f" >"$S/d$d/f$f"
	done
done
echo "the same content" >"$S/dup1"
echo "the same content" >"$S/d2/dup2"
seq 1 30000 >"$S/big"
echo "the copy" >"$S/copy"
dd if="$S/big" of="$S/reccopy" bs=16384 skip=1 count=1 status=none

sqlq() { sqlite3 "$1/catalog.db" "$2"; }
# census POOLDIR: the root node the census of fs describes, or nothing
census() {
	sqlq "$1" "SELECT hex(c.root) FROM census2_state c JOIN datasets d ON d.id = c.ds_id WHERE d.name = 'fs'"
}
# newest POOLDIR: the root node of fs's newest snapshot
newest() {
	sqlq "$1" "SELECT hex(s.root) FROM snapshots s JOIN datasets d ON d.id = s.ds_id
		WHERE d.name = 'fs' ORDER BY s.createtxg DESC LIMIT 1"
}
rows() {
	sqlq "$1" "SELECT (SELECT count(*) FROM census2_nodes) || ' ' || (SELECT count(*) FROM census2_blocks)"
}
# both DESC: the census of tank/fs and bk/fs describes each one's newest tree
both() {
	is "$(census "$T/p/tank")" "$(newest "$T/p/tank")" "$1: tank/fs's census describes its newest tree"
	is "$(census "$T/p/bk")" "$(newest "$T/p/bk")" "$1: bk/fs's census describes its newest tree"
}
# step FROM TO: snapshot tank/fs@TO, and receive FROM -> TO into bk/fs
step() {
	ferry snapshot "tank/fs@$2"
	run sh -c "'$FERRY' send -i @$1 tank/fs@$2 | '$FERRY' recv ${3:-} bk/fs"
	is "$rc:$(cat "$T/err")" "0:" "receive $1 -> $2 ${3:-}"
}

ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@1
ferry send tank/fs@1 | ferry recv bk/fs
is "$(census "$T/p/tank")|$(census "$T/p/bk")" "|" "no census after a full snapshot and a full receive"

sleep 0.05
# a file added, no block let go: the first incremental that changes
# anything counts the tree
echo "added" >"$S/d1/added"
step 1 1a
both "the first incremental, which only adds"

sleep 0.05
# a file's block goes: the census kept, not rebuilt
echo "more" >>"$S/d0/f3"
step 1a 2
both "an incremental that lets a block go"

sleep 0.05
# dup1 changes while d2/dup2 keeps its block (and its blocklist); reccopy
# changes while big keeps its old block
echo "other content" >"$S/dup1"
echo "more" >>"$S/reccopy"
step 2 3
both "blocks still held elsewhere"

# nothing changed: the census stays where it is
ferry snapshot tank/fs@4
run sh -c "'$FERRY' send -i @3 tank/fs@4 | '$FERRY' recv bk/fs"
is "$rc" 0 "receive the no-change incremental 3 -> 4"
both "no change"

# the newest goes: the census follows to @3's tree (same as @4's), then
# @3 goes too and it follows to @2's
for pl in tank bk; do
	ferry destroy "$pl/fs@4"
	ferry destroy "$pl/fs@3"
	ferry gc "$pl" >/dev/null
done
both "after destroying the two newest and gc"
is "$(census "$T/p/tank")" "$(sqlq "$T/p/tank" "SELECT hex(root) FROM snapshots WHERE name = '2'")" \
	"which is @2's tree"

sleep 0.05
echo "3b" >"$S/d1/f1"
rm "$S/d2/dup2"
step 2 3b
both "an incremental after the census followed a destroy"

# rows that prove wrong are dropped, and the walk decides as before
sqlq "$T/p/bk" "DELETE FROM census2_blocks"
sleep 0.05
echo "4" >"$S/d0/f0"
rm "$S/reccopy"
step 3b 4
is "$(census "$T/p/bk")" "" "a census whose counts go below zero is dropped"
is "$(census "$T/p/tank")" "$(newest "$T/p/tank")" "tank/fs's census still describes its newest tree"
sleep 0.05
echo "5" >"$S/d0/f1"
step 4 5
both "the next incremental that lets a block go counts the tree again"

# a rollback in tank; recv -F rolls bk back too, inside the receive's
# commit: the census follows the rollback to @4's tree, and the snapshot,
# committed as a whole set onto a base that was not the newest when it
# was prepared, leaves it there
ferry rollback -r tank/fs@4
both "after a rollback of tank (bk unchanged)"
sleep 0.05
echo "5b" >"$S/d1/f2"
echo "the same content" >"$S/d2/dup2"
step 4 5b -F
is "$(census "$T/p/tank")" "$(newest "$T/p/tank")" "recv -F: tank/fs's census describes its newest tree"
is "$(census "$T/p/bk")" "$(sqlq "$T/p/bk" "SELECT hex(root) FROM snapshots WHERE name = '4'")" \
	"recv -F: bk/fs's census describes @4's tree, where the rollback left it"
sleep 0.05
echo "6" >"$S/d1/f3"
step 5b 6
both "the next incremental after recv -F"
is "$(rows "$T/p/bk")" "$(rows "$T/p/tank")" "bk's rebuilt census has as many rows as tank's kept one"

# an incremental whose entry "copy" names the base's blocklist of "copy"
# for a file one byte longer: the receive's walk skips an entry only when
# it is the base's at the same path, size included, so this is refused
guid=$(ferry get -H -p -o value guid bk/fs@6)
bh=$(python3 -c 'import hashlib; print(hashlib.blake2b(b"the copy\n", digest_size=32).hexdigest())')
leaf=$(sqlq "$T/p/bk" "SELECT hex(hash) FROM nodes WHERE type = 2 AND length(data) = 41
	AND substr(data, 1, 5) = x'0100000001' AND substr(data, 10, 32) = x'$bh'")
mkdir "$T/h"
run "$FERRY_TOOLS/mkhostile" -i "$guid" "$leaf" 9 "$T/h"
is "$rc" 0 "mkhostile -i writes the incremental cases"
before=$(figures bk)
refused 1 "blocklist covers 9 bytes, its file 10" \
	"an entry naming the base's blocklist at the same path with another size is refused" \
	ferry recv bk/fs <"$T/h/incr-span.stream"
is "$(figures bk)" "$before" "nothing of it is committed"

# a destroyed dataset's census goes with it
ferry create -o source="$S" tank/other
ferry snapshot tank/other@a
echo "x" >>"$S/d0/f0"
ferry snapshot tank/other@b
is "$(sqlq "$T/p/tank" "SELECT count(*) FROM census2_state")" 2 "tank/other has a census"
ferry destroy -r tank/other
is "$(sqlq "$T/p/tank" "SELECT count(*) FROM census2_state")|$(rows "$T/p/tank")" \
	"1|$(rows "$T/p/bk")" "destroying tank/other drops its census rows"

# a census of the first version (its tables census_state, census_nodes
# and census_blocks: counts of another kind) is dropped by the next
# writable open, never read
sqlq "$T/p/tank" "CREATE TABLE census_state(ds_id INTEGER PRIMARY KEY, root BLOB NOT NULL);
	CREATE TABLE census_nodes(ds_id INTEGER NOT NULL, hash BLOB NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY(ds_id, hash)) WITHOUT ROWID;
	CREATE TABLE census_blocks(ds_id INTEGER NOT NULL, hash BLOB NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY(ds_id, hash)) WITHOUT ROWID;
	INSERT INTO census_state SELECT ds_id, root FROM census2_state"
ferry gc tank >/dev/null
is "$(sqlq "$T/p/tank" "SELECT count(*) FROM sqlite_master WHERE name LIKE 'census\_%' ESCAPE '\'")" 0 \
	"the first version's census tables are dropped"

# gc, then every snapshot restores and the figures equal pools that got
# the same snapshots in one go
ferry pool create ctl "$T/p/ctl"
ferry pool create -o compression=gzip-7 ctlbk "$T/p/ctlbk"
ferry send -R tank/fs@6 | ferry recv ctl/fs
ferry send -R tank/fs@6 | ferry recv ctlbk/fs
after_check tank/fs ctl/fs "tank after the incrementals"
after_check bk/fs ctlbk/fs "bk after the incremental receives"
done_testing
