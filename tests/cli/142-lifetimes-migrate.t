#!/bin/sh
# Block lifetimes (docs/notes/lifetimes.md): a pool made by ferry 13ee6f9,
# whose catalogue keeps one snap_blocks row per (snapshot, block)
# (tests/cli/pool-snapblocks.tar.gz, made by lifetimes_lib.sh's history:
# a file gone and back, a block under two codecs, the middle snapshot of
# three destroyed, a child, a hold, a bookmark, a received dataset), with
# what that ferry listed (old-state.txt: list, get all, holds). This ferry
# lists it the same before converting it (read-only: a TEMP view) and
# after (its first writable open converts snap_blocks to ds_refs in one
# transaction and drops it); gc has nothing to collect; then it goes on
# (snapshots, destroys, a rollback) and ends equal to a control pool that
# this ferry built with the same history.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/lifetimes_lib.sh"

P=$T/p/old
mkdir -p "$P"
tar -C "$P" -xzf "$FERRY_SRC/tests/cli/pool-snapblocks.tar.gz"
mv "$P/old-state.txt" "$T/old-state.txt"
chmod -R go= "$P"
sqlq() { sqlite3 "$P/catalog.db" "$1"; }
# as the old ferry left it registered (an import would open it writable)
mkdir -p "$FERRY_HOME/pools"
echo "$P" >"$FERRY_HOME/pools/tank"
. "$FERRY_SRC/tests/cli/recover_lib.sh"

is "$(state)" "$(cat "$T/old-state.txt")" "read-only: list, get all and holds are the old ferry's"
is "$(sqlq "SELECT type FROM sqlite_master WHERE name = 'snap_blocks'")" "table" "... and a read-only open did not convert"
nold=$(sqlq "SELECT count(*) FROM snap_blocks")

run ferry gc -v tank
like "$rc:$(cat "$T/out")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 0 rewritten, 0 orphans removed$" \
	"the first writable open converts, and gc finds nothing to collect"
is "$(sqlq "SELECT type FROM sqlite_master WHERE name = 'snap_blocks'")" "view" "snap_blocks is a view now"
is "$(sqlq "SELECT count(*) FROM snap_blocks")" "$nold" "... giving the old rows, $nold of them"
like "$(sqlq "SELECT count(*) FROM ds_refs")" "^[1-9]" "ds_refs holds the lifetimes"
is "$(sqlq "SELECT count(*) FROM ds_refs WHERE died IS NOT NULL AND died <= born")" "0" "... none empty"
is "$(sqlq "SELECT value FROM meta WHERE key = 'multicopy'")" "1" "the block under two codecs is marked"
is "$(state)" "$(cat "$T/old-state.txt")" "converted: list, get all and holds are the old ferry's"

# the control: the same history by this ferry
run history "$FERRY" ctl "$T/p/ctl" "$T/cs"
is "$rc" 0 "the control is built"
after_check tank ctl "converted pool"

# both go on: a snapshot on the converted rows, a destroy of the held
# one's neighbour, a rollback, and the snapshot a rollback made newest
for x in "tank $T/ts" "ctl $T/cs"; do
	set -- $x
	mkdir -p "$2/fs"
	ferry set source="$2/fs" "$1/fs"
	seq 1 2000 >"$2/fs/a"; seq 5 3000 >"$2/fs/b"; seq 100 900 >"$2/fs/c"; seq 1 2500 >"$2/fs/a2"
	_still "$2"
	ferry snapshot "$1/fs@s5" && ferry snapshot "$1/fs@s6" &&
		ferry destroy "$1/fs@s4" && ferry rollback -r "$1/fs@s5" &&
		ferry release keep "$1/fs@s3" && ferry destroy "$1/fs@s3" &&
		ferry snapshot "$1/fs@s7" || not_ok "going on in $1"
done
is "$(ferry list -H -o name -t snapshot -r tank/fs)" "tank/fs@s1
tank/fs@s5
tank/fs@s7
tank/fs/child@c1
tank/fs/child@c2" "the converted pool has the snapshots meant"
# both had the same history since the control was checked: gc on both,
# then the same figures, blocks and restores
ferry gc tank >/dev/null && ferry gc ctl >/dev/null || not_ok "gc"
is "$(figures tank)" "$(figures ctl)" "after more history and gc, the figures equal the control's"
is "$(codecs tank)" "$(codecs ctl)" "... and the blocks per codec"
bad=0
for s in $(ferry list -H -r -t snapshot -o name tank); do
	c=ctl${s#tank}
	rm -rf "$TS/r1" "$TS/r2"
	{ ferry restore "$s" "$TS/r1" && ferry restore "$c" "$TS/r2" &&
		"$FERRY_TOOLS/treecmp" "$TS/r1" "$TS/r2"; } </dev/null >/dev/null 2>"$T/err" ||
		{ bad=1; diag "$s: $(cat "$T/err")"; }
done
is "$bad" 0 "... and every snapshot restores identical to the control's"
done_testing
