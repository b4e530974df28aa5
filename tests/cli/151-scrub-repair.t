#!/bin/sh
# Issue 15, item 2: ferry scrub --repair-from REPLICA heals the damaged
# blocks and nodes from another pool made by send | recv: a new pack, the
# index pointed at it, never an overwrite in place; afterwards every
# snapshot restores identical and the pool equals a control that got the
# same data in one go (gc, space figures, blocks per codec); what the
# replica does not hold stays reported.
. "$(dirname "$0")/lib.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
S="$T/src"
mkdir -p "$T/p" "$S/d"
seq 1 30000 >"$S/numbers"
head -c 90000 /dev/urandom >"$S/d/random"
echo small >"$S/d/small"
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
seq 40000 42000 >>"$S/numbers"
head -c 30000 /dev/urandom >"$S/d/new"
ferry snapshot tank/fs@b
# the replica, a replica in another codec, and the control: each by send -R | recv
for p in bk ctl; do
	ferry pool create -o compression=lz4 $p "$T/p/$p"
	ferry send -R tank/fs@b | ferry recv $p/fs
done
ferry pool create -o compression=gzip-6 gz "$T/p/gz"
ferry send -R tank/fs@b | ferry recv gz/fs
cp -a "$T/p/tank" "$T/tank.clean"
# likes GOT REGEX DESC: REGEX (Python's) matched against the whole text,
# '.' matching newlines too (lib.sh's like is grep's: each line of a
# multi-line REGEX would be a pattern of its own, matching any line)
likes() {
	if printf '%s' "$1" | python3 -c 'import re, sys; sys.exit(0 if re.search(sys.argv[1], sys.stdin.read(), re.S) else 1)' "$2"; then
		ok "$3"; else not_ok "$3"; diag "got:  $1" "want: /$2/"; fi
}
fresh() { rm -rf "$T/p/tank"; cp -a "$T/tank.clean" "$T/p/tank"; }

# ---- bit flips in blocks and nodes, a deleted pack ----------------------------------
python3 "$LIB" flip-blocks "$T/p/tank" 8 1511 >"$T/flips"
python3 "$LIB" flip-nodes "$T/p/tank" 2 1512 >>"$T/flips"
run ferry scrub tank
is "$rc" 5 "the damaged pool scrubs with exit 5"
packs_before=$(ls "$T/p/tank/packs" | sort)
run ferry scrub --repair-from bk tank
likes "$rc:$(cat "$T/out" "$T/err")" "^0:  pool: tank
  scan: scrub repaired [0-9.]+[KM]? in [0-9:]{8} with 0 errors on .*
repair: 10 damaged items healed from 'bk' \([0-9.]+[KM]? written\), 0 not held there
errors: No known data errors$" "scrub --repair-from bk: 10 items healed, no error left, exit 0"
ls "$T/p/tank/packs" | sort >"$T/after"
is "$(echo "$packs_before" | comm -23 - "$T/after")" "" \
	"every pack file is still there (nothing rewritten in place, only a pack added)"
is "$(ls "$T/p/tank/packs" | wc -l)" "$(($(echo "$packs_before" | wc -l) + 2))" \
	"two new packs hold the good copies: the blocks, and the nodes as records (format 2)"
likes "$(ferry pool status tank)" " state: ONLINE
  scan: scrub repaired [0-9.]+[KM]? in " "pool status: ONLINE, scan says what was repaired"
run ferry scrub tank
is "$rc:$(sed -n 3p "$T/out")" "0:errors: No known data errors" "a scrub after the repair finds nothing"
# the healed nodes are in the packs too: with the old copies of their
# records damaged there as well, pool recover still finds a good one
cp -a "$T/p/tank" "$T/rec"
ferry pool import "$T/rec" rec >/dev/null
hits=$(python3 - "$T/rec/packs" "$T/flips" $(echo "$packs_before" | comm -13 - "$T/after") <<'PY'
import os, sys
d, flips, new = sys.argv[1], sys.argv[2], set(sys.argv[3:])
hashes = [bytes.fromhex(l.split()[1]) for l in open(flips) if l.startswith('node ')]
n = 0
for name in os.listdir(d):
    if name in new:
        continue  # the repair's two packs
    path = os.path.join(d, name)
    b = bytearray(open(path, 'rb').read())
    hit = False
    for h in hashes:
        i = b.find(h)
        while i >= 12:
            if b[i - 12:i - 8] == b'FNOD':
                b[i + 32] ^= 1  # the first byte of the node's data
                hit = True
                n += 1
            i = b.find(h, i + 1)
    if hit:
        open(path, 'wb').write(b)
print(n)
PY
)
like "$hits" '^[1-9]' "the healed nodes' old records in the older packs damaged ($hits)"
rm -f "$T/rec/catalog.db" "$T/rec/catalog.db-wal" "$T/rec/catalog.db-shm"
run ferry pool recover rec
like "$rc" "^[03]$" "pool recover after the repair, the nodes' old records damaged too: rebuilt"
# the scrub checks the node records in the packs too (pack format 3): the
# old records damaged above are reported, each once, and nothing else
"$FERRY" scrub --json rec >"$T/j"
is "$?:$(python3 -c 'import json,sys; e=json.load(sys.stdin)["pools"]["rec"]["errors"]; print(sorted(set(x["kind"] for x in e)), len(e))' <"$T/j")" \
	"5:['record'] $hits" "and the recovered pool scrubs clean but for the $hits node records damaged in the old packs"
# pool status tells record damage from block damage: every file restores
run ferry pool status rec
is "$rc:$(grep -c '^ state: DEGRADED$' "$T/out"):$(grep -c '^status: One or more records in the packs are damaged' "$T/out"):$(grep -c 'cannot be' "$T/out")" \
	"0:1:1:0" "pool status: DEGRADED by damaged records in the packs, not by files that cannot be restored"
ferry pool export rec
after_check tank ctl "repaired from a replica"

# ---- a deleted pack, healed from a replica in another codec -------------------------
fresh
pk=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name FROM packs k ORDER BY (SELECT count(*) FROM blocks WHERE pack_id = k.id) DESC LIMIT 1")
rm "$T/p/tank/packs/$pk"
run ferry scrub tank
is "$rc" 5 "a deleted pack: exit 5"
run ferry scrub --repair-from gz tank
likes "$rc:$(cat "$T/out" "$T/err")" "^0:.*with 0 errors on .*
repair: [0-9]+ damaged items healed from 'gz' .*, 0 not held there
errors: No known data errors$" "healed from a gzip replica: its copies are encoded again as lz4"
is "$(sqlite3 "$T/p/tank/catalog.db" "SELECT count(*) FROM packs WHERE name = '$pk'")" 0 \
	"the missing pack's row is gone with its last block"
after_check tank ctl "a deleted pack repaired from another codec"

# ---- what no replica holds stays reported -------------------------------------------
fresh
echo newer >"$S/only-here"
ferry snapshot tank/fs@c
row=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name || ' ' || (b.offset + 48) FROM blocks b JOIN packs k ON k.id = b.pack_id
	WHERE b.id NOT IN (SELECT block_id FROM snap_blocks WHERE snap_id != (SELECT id FROM snapshots WHERE name = 'c')) LIMIT 1")
python3 -c "
import sys; n, o = sys.argv[1], int(sys.argv[2])
f = open(sys.argv[3] + '/' + n, 'r+b'); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 1]))" $row "$T/p/tank/packs"
python3 "$LIB" flip-blocks "$T/p/tank" 2 1513 >/dev/null
run ferry scrub --repair-from bk tank
likes "$rc:$(cat "$T/out")" "^5:.*repair: [0-9]+ damaged items healed from 'bk' \([0-9.]+[KM]? written\), 1 not held there
errors: Permanent errors have been detected in the following files:

        tank/fs@c:/only-here$" "a block only this pool had stays reported with its file, exit 5"
run ferry restore tank/fs@b "$TS/rb"
is "$rc" 0 "the snapshots the replica covers restore again"
run ferry restore tank/fs@c "$TS/rc"
is "$rc" 1 "the one with the unrepairable block does not"
refused 2 "--repair-from needs another pool than 'tank'" "repair from itself is refused" \
	ferry scrub --repair-from tank tank
refused 1 "cannot repair 'tank' from 'nosuch'" "repair from a pool that does not exist: exit 1" \
	ferry scrub --repair-from nosuch tank
done_testing
