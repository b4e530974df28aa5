#!/bin/sh
# Incremental capture and receive in O(change) (issue 14): the new
# snapshot takes over its base's block references and corrects them by
# what changed, instead of walking the whole tree. This checks the
# corrections: files changed deep in an unchanged tree, a subtree
# removed, a directory renamed, one replaced by a file, a directory
# copied (pool nodes named from outside their old place), a block whose
# old file goes while another file still holds it, a no-change
# snapshot. After each capture and each receive the snapshot's block set
# must be exactly the one a full walk gives (a full receive of the same
# snapshot into a control pool), every snapshot must restore as its
# source was, and after destroying the older snapshots and gc the rest
# must still restore. Then hostile incrementals (tests/tools/mkhostile -i)
# that name a node the pool does not have, or a pool blocklist with the
# wrong size, are refused with nothing committed.
. "$(dirname "$0")/lib.sh"
TREECMP="$FERRY_TOOLS/treecmp"
mkdir -p "$T/p"
S="$TS/src"
ferry pool create tank "$T/p/tank"
ferry pool create -o compression=gzip-7 bk "$T/p/bk"
ferry pool create -o compression=gzip-7 ctl "$T/p/ctl"

# the tree: 4 levels of directories, 600 small files, a 200 KiB file of
# 16 KiB records, two files with the same content, a hardlink, a symlink
awk -v S="$S" 'BEGIN {
	for (a = 0; a < 3; a++) for (b = 0; b < 4; b++) for (c = 0; c < 5; c++) {
		dir = sprintf("%s/a%d/b%d/c%d", S, a, b, c); system("mkdir -p " dir)
		for (f = 0; f < 10; f++) {
			p = sprintf("%s/f%d", dir, f)
			printf "file %d %d %d %d\n", a, b, c, f > p
			close(p)
		}
	}
}'
mkdir -p "$S/gone/deep/er" "$S/moved/x" "$S/todo" "$S/copyme"
echo "in gone" >"$S/gone/deep/er/g"
echo "moving" >"$S/moved/x/m"
echo "a dir now" >"$S/todo/t"
echo "copied" >"$S/copyme/c"
seq 1 40000 >"$S/big"
echo "the same content" >"$S/dup1"
echo "the same content" >"$S/dup2"
# one record of big as a file of its own: the block, not the blocklist, is shared
dd if="$S/big" of="$S/reccopy" bs=16384 skip=1 count=1 status=none
ln "$S/a0/b0/c0/f0" "$S/hard"
ln -s a0 "$S/link"

sqlq() { sqlite3 "$1/catalog.db" "$2"; }
# blockset POOLDIR DS SNAP: the snapshot's distinct blocks
blockset() {
	sqlq "$1" "SELECT hex(b.hash) || ' ' || b.codec FROM snap_blocks x JOIN snapshots s ON s.id = x.snap_id
		JOIN datasets d ON d.id = s.ds_id JOIN blocks b ON b.id = x.block_id
		WHERE d.name = '$2' AND s.name = '$3' ORDER BY 1"
}
# fullset SNAP: the block set of tank/fs@SNAP as a full receive (a walk
# of the whole tree) makes it, in the control pool
fullset() {
	ferry send "tank/fs@$1" | ferry recv "ctl/full-$1" || return 1
	blockset "$T/p/ctl" "full-$1" "$1" | cut -d' ' -f1
}
# check SNAP DESC: the capture's and the receive's block sets are exact
check() {
	_want=$(fullset "$1")
	is "$(blockset "$T/p/tank" fs "$1" | cut -d' ' -f1)" "$_want" "$2: the capture references exactly the tree's blocks"
	is "$(blockset "$T/p/bk" fs "$1" | cut -d' ' -f1)" "$_want" "$2: the incremental receive references exactly the tree's blocks"
	is "$(ferry get -H -p -o value referenced,logicalreferenced "bk/fs@$1")" \
		"$(ferry get -H -p -o value referenced,logicalreferenced "ctl/full-$1@$1")" \
		"$2: referenced figures equal a full receive's"
	cp -a "$S" "$TS/copy-$1"
}

ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@1
ferry send tank/fs@1 | ferry recv bk/fs
check 1 "full"

sleep 0.05
# a change deep in an unchanged tree, a removed subtree, a renamed
# directory, a directory replaced by a file, a copied directory, one
# record of the big file, and dup1 changed while dup2 keeps its block
echo "changed deep" >>"$S/a1/b2/c3/f4"
rm -rf "$S/gone"
mv "$S/moved" "$S/moved-too"
rm -rf "$S/todo" && echo "a file now" >"$S/todo"
cp -a "$S/copyme" "$S/a2/copy"
printf 'X' | dd of="$S/big" bs=1 seek=50000 conv=notrunc status=none
echo "other content" >"$S/dup1"
ferry snapshot tank/fs@2
run sh -c "'$FERRY' send -i @1 tank/fs@2 | '$FERRY' recv -v bk/fs"
is "$rc" 0 "receive the incremental 1 -> 2"
check 2 "changes"

# nothing changed
ferry snapshot tank/fs@3
run sh -c "'$FERRY' send -i @2 tank/fs@3 | '$FERRY' recv bk/fs"
is "$rc" 0 "receive the no-change incremental 2 -> 3"
check 3 "no change"

sleep 0.05
# the last file holding the old dup block goes; a new file gets content
# an unchanged file has; a whole level-1 tree goes; reccopy changes, and
# its old block is still big's (unchanged): found by the walk of the tree
rm "$S/dup2"
echo more >"$S/reccopy"
echo "file 0 0 0 1" >"$S/new-same-as-f1"
rm -rf "$S/a0/b3"
ferry snapshot tank/fs@4
run sh -c "'$FERRY' send -i @3 tank/fs@4 | '$FERRY' recv bk/fs"
is "$rc" 0 "receive the incremental 3 -> 4"
check 4 "removals"

# -F with a rollback: @4 goes, 3 -> 4b comes instead
ferry rollback -r tank/fs@3
echo "4b" >"$S/a2/b1/c1/f9"
ferry snapshot tank/fs@4b
run sh -c "'$FERRY' send -i @3 tank/fs@4b | '$FERRY' recv -F bk/fs"
is "$rc" 0 "recv -F rolls back @4 and receives 3 -> 4b"
check 4b "after a rollback"

# every snapshot restores as its source was
for s in 1 2 3 4b; do
	for pl in tank bk; do
		rm -rf "$TS/r"
		ferry restore "$pl/fs@$s" "$TS/r"
		"$TREECMP" --no-root "$TS/copy-$s" "$TS/r" >"$T/err" 2>&1 &&
			ok "$pl/fs@$s restores as its source was" ||
			{ not_ok "$pl/fs@$s differs"; diag "$(head -3 "$T/err")"; }
	done
done
# the older snapshots go; gc keeps what the rest still use
for pl in tank bk; do
	ferry destroy "$pl/fs@1" && ferry destroy "$pl/fs@2" && ferry destroy "$pl/fs@3"
	ferry gc "$pl" >/dev/null
	rm -rf "$TS/r"
	ferry restore "$pl/fs@4b" "$TS/r"
	"$TREECMP" --no-root "$TS/copy-4b" "$TS/r" >"$T/err" 2>&1 &&
		ok "$pl: after destroying @1-@3 and gc, @4b restores as its source was" ||
		{ not_ok "$pl: @4b differs after gc"; diag "$(head -3 "$T/err")"; }
done
ferry gc ctl >/dev/null
is "$(blockset "$T/p/bk" fs 4b | cut -d' ' -f1)" "$(blockset "$T/p/ctl" full-4b 4b | cut -d' ' -f1)" \
	"after gc, @4b's block set is unchanged"

# ---- hostile incrementals --------------------------------------------------------
guid=$(ferry get -H -p -o value guid bk/fs@4b)
# another dataset's file: the pool has its blocklist, bk/fs@4b does not
mkdir "$TS/other"
echo "only in other" >"$TS/other/o"
ferry create -o source="$TS/other" bk/other
ferry snapshot bk/other@o
# its one-block leaf (docs/ferry-nodes.md: count, then kind, length and
# hash per extent)
bh=$(python3 -c 'import hashlib, sys; print(hashlib.blake2b(b"only in other\n", digest_size=32).hexdigest())')
leaf=$(sqlq "$T/p/bk" "SELECT hex(hash) FROM nodes WHERE type = 2 AND length(data) = 41
	AND substr(data, 1, 5) = x'0100000001' AND substr(data, 10, 32) = x'$bh'")
leafsize=14
mkdir "$T/h"
run "$FERRY_TOOLS/mkhostile" -i "$guid" "$leaf" "$leafsize" "$T/h"
is "$rc" 0 "mkhostile -i writes the incremental cases"
before=$(ferry list -H -p -t all -o name,guid,used,referenced -r bk)
bblocks=$(ferry pool status bk | sed -n '/CODEC/,$p')
refused 1 "dangling reference to node $(cut -f2 "$T/h/incr-dangling.expect" | sed 's/.* //')" \
	"an incremental naming a node neither it nor the pool has is refused" \
	ferry recv bk/fs <"$T/h/incr-dangling.stream"
refused 1 "blocklist covers $leafsize bytes, its file $((leafsize + 1))" \
	"an incremental naming a pool blocklist with the wrong file size is refused" \
	ferry recv bk/fs <"$T/h/incr-span.stream"
is "$(ferry list -H -p -t all -o name,guid,used,referenced -r bk)" "$before" "nothing of them is committed"
ferry gc bk >/dev/null
is "$(ferry pool status bk | sed -n '/CODEC/,$p')" "$bblocks" "and gc finds the pool's blocks as they were"
run ferry recv bk/fs <"$T/h/incr-ok.stream"
is "$rc" 0 "the valid incremental built the same way is received"
ferry destroy bk/fs@4b && ferry destroy -r bk/other && ferry gc bk >/dev/null
rm -rf "$TS/r"
run ferry restore bk/fs@s "$TS/r"
is "$rc:$(cat "$TS/r/new" 2>&1)" "0:brand new" "after its base and the other dataset are destroyed and gc, it restores: its new block"
is "$(cat "$TS/r/copy" 2>&1)" "only in other" "and the other dataset's block, which its blocklist names and gc kept"
done_testing
