#!/bin/sh
# Issue 15, item 1: ferry scrub checks every block and node and the
# catalogue against the packs; every damage is reported with the files that
# use it (checked against an oracle that hashes the kept source trees, and
# against restore), in zpool's words; -s stops a scrub and the next one
# continues; pool status shows the last scan and the errors; --json is
# what ferry-json(7) says; exit 0 clean, 5 damaged, 1 could not run.
. "$(dirname "$0")/lib.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
MAN="$FERRY_SRC/docs/ferry-json.7"
CHECK="$FERRY_SRC/tests/cli/json_check.py"
S="$T/src"
mkdir -p "$T/p" "$S/d/e" "$S/big"
seq 1 20000 >"$S/numbers"
head -c 70000 /dev/urandom >"$S/d/random"
echo small >"$S/d/e/small"
for i in 1 2 3; do head -c 40000 /dev/urandom >"$S/big/r$i"; done
ferry pool create tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
cp -a "$S" "$TS/a"
seq 30000 31000 >>"$S/numbers"
head -c 20000 /dev/urandom >"$S/d/e/new"
ferry snapshot tank/fs@b
cp -a "$S" "$TS/b"
ferry bookmark tank/fs@a tank/fs#mark
# a second pool for the other codecs, and a volume
ferry pool create -o compression=gzip-6 gz "$T/p/gz"
ferry create -o source="$S" gz/fs
ferry snapshot gz/fs@x
head -c 300000 /dev/urandom >"$T/vol.img"
ferry create -V 1M gz/vol
ferry snapshot --from "$T/vol.img" gz/vol@v
cp -a "$T/p/tank" "$T/tank.clean"
TREES="tank/fs@a=$TS/a tank/fs@b=$TS/b"

# check FLIPS DESC: scrub --json's report equals the oracle's
check() {
	"$FERRY" scrub --json tank >"$T/j" 2>"$T/je"
	_rc=$?
	_res=$(python3 "$LIB" check "$1" 16384 tank $TREES <"$T/j" 2>&1)
	is "$_rc:$_res" "5:ok" "$2"
}
# likes GOT REGEX DESC: like, with REGEX matched against the whole text
# (Python's re, '.' matching newlines too)
likes() {
	if printf '%s' "$1" | python3 -c 'import re, sys; sys.exit(0 if re.search(sys.argv[1], sys.stdin.read(), re.S) else 1)' "$2"; then
		ok "$3"; else not_ok "$3"; diag "got:  $1" "want: /$2/"; fi
}
# fresh: tank back to its clean copy
fresh() { rm -rf "$T/p/tank"; cp -a "$T/tank.clean" "$T/p/tank"; }

# ---- clean pools: exit 0, nothing false ------------------------------------------
for p in tank gz; do
	run ferry scrub "$p"
	likes "$rc:$(cat "$T/out" "$T/err")" "^0:  pool: $p
  scan: scrub repaired 0B in 00:00:0[0-9] with 0 errors on [A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-9]{2} [0-9:]{8} [0-9]{4}
errors: No known data errors$" "clean pool $p: exit 0, zpool's scan line, no known data errors"
done
run ferry scrub -v tank
likes "$(cat "$T/out")" "checked: .* in [0-9]+ blocks, [0-9]+ nodes, 3 snapshot and bookmark trees" \
	"scrub -v says what it checked (2 snapshots and a bookmark)"
"$FERRY" scrub --json gz >"$T/j"
is "$?:$(python3 "$CHECK" "$MAN" "ferry scrub" <"$T/j")" "0:ok" "scrub --json is what ferry-json(7) describes"
is "$(python3 -c 'import json,sys; d=json.load(sys.stdin)["pools"]["gz"]; print(d["errors"], d["scan"]["state"], d["scan"]["bytes_checked"] == d["bytes_total"] > 0)' <"$T/j")" \
	"[] finished True" "scrub --json of a clean pool: no errors, finished, every byte checked"
run ferry pool status tank
likes "$(sed -n 2,3p "$T/out")" "^ state: ONLINE
  scan: scrub repaired 0B in 00:00:0[0-9] with 0 errors on " "pool status: ONLINE and the last scan"
likes "$(cat "$T/out")" "errors: No known data errors" "pool status: no known data errors"
ferry pool create never "$T/p/never"
likes "$(ferry pool status never)" "  scan: none requested" "pool status of a pool never scrubbed: none requested"
"$FERRY" pool status --json >"$T/j"
is "$?:$(python3 "$CHECK" "$MAN" "ferry pool status" <"$T/j")" "0:ok" "pool status --json with scan and errors"

# ---- bit flips in blocks (headers and payloads) -----------------------------------
fresh
python3 "$LIB" flip-blocks "$T/p/tank" 6 1501 >"$T/flips"
check "$T/flips" "6 flipped blocks: each reported with exactly the files that use it"
run ferry scrub tank
is "$rc:$(grep -c '^        tank/fs@' "$T/out")" "5:$(python3 -c '
import json,sys; d=json.load(open(sys.argv[1])); print(len(set(f for e in d["pools"]["tank"]["errors"] for f in e["files"])))' "$T/j")" \
	"the text lists each damaged file once, exit 5"
likes "$(cat "$T/out")" "errors: Permanent errors have been detected in the following files:" "in zpool's words"
# restore agrees: exactly the listed files fail to restore
_bad=0
for s in a b; do
	for f in $(cd "$TS/$s" && find . -type f | sed 's|^\./||'); do
		if "$FERRY" restore --file "$f" "tank/fs@$s" "$TS/r" >/dev/null 2>&1; then fail=0; else fail=1; fi
		rm -rf "$TS/r"
		listed=0; grep -qx "        tank/fs@$s:/$f" "$T/out" && listed=1
		[ "$fail" = "$listed" ] || { _bad=$((_bad + 1)); diag "tank/fs@$s:/$f restore fails: $fail, listed: $listed"; }
	done
done
is "$_bad" 0 "restore --file fails for exactly the files scrub lists"
run ferry pool status -v tank
likes "$(sed -n 2p "$T/out")" "^ state: DEGRADED$" "pool status: DEGRADED with known damage"
likes "$(cat "$T/out")" "scan: scrub repaired 0B in [0-9:]{8} with 6 errors on .*
errors: Permanent errors have been detected in the following files:" "pool status: the scan's error count and the files"
likes "$(cat "$T/out")" "damage:
        block [0-9a-f]{16} in pack '[0-9a-f]{16}\.pack' at offset [0-9]+ is damaged: " \
	"pool status -v names each damaged block, its pack and offset"
"$FERRY" pool status --json tank >"$T/j"
is "$?:$(python3 "$CHECK" "$MAN" "ferry pool status" <"$T/j")" "0:ok" "pool status --json with errors"

# ---- node flips (the catalogue's node rows) ---------------------------------------
fresh
# blocklists: leaves, so none is under another damaged node (a node that
# is can be named by no path, as zpool names no file under a damaged
# directory; the directory case follows)
python3 "$LIB" flip-nodes "$T/p/tank" 3 1502 2 >"$T/flips"
check "$T/flips" "3 flipped blocklist nodes: each reported with its file"
# a directory's node: the directory is named, and restore fails below it only
fresh
dnode=$(python3 - "$T/p/tank/catalog.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
# the directory node holding 'small': the node of d/e, the same in @a and @b?
for h, d in db.execute("SELECT hash, data FROM nodes WHERE type = 1"):
    if b'small' in d and b'new' not in d:
        d = bytearray(d); d[-1] ^= 1
        db.execute("UPDATE nodes SET data = ? WHERE hash = ?", (bytes(d), h)); db.commit()
        print(h.hex()); break
EOF
)
run ferry scrub -v tank
likes "$rc:$(cat "$T/out")" "^5:.*
        tank/fs@a:/d/e
" "a damaged directory node: the directory is listed"
likes "$(cat "$T/out")" "node ${dnode%${dnode#????????????????}} is damaged: node content does not match its hash" \
	"and the node is named, with its hash"
run ferry restore --file numbers tank/fs@a "$TS/r1"
is "$rc" 0 "restore of a file outside that directory still works"
run ferry restore --file d/e/small tank/fs@a "$TS/r2"
is "$rc" 1 "restore of a file inside it fails"

# ---- deleted, truncated and orphan packs -------------------------------------------
fresh
pk=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name FROM packs k ORDER BY (SELECT count(*) FROM blocks WHERE pack_id = k.id) LIMIT 1")
nb=$(sqlite3 "$T/p/tank/catalog.db" "SELECT count(*) FROM blocks b JOIN packs k ON k.id = b.pack_id WHERE k.name = '$pk'")
rm "$T/p/tank/packs/$pk"
run ferry scrub -v tank
likes "$rc:$(cat "$T/out")" "^5:.*pack '$pk' is missing \($nb indexed blocks\)" "a deleted pack is reported"
is "$(grep -c "in pack '$pk' at offset [0-9]* is damaged: its pack file is missing" "$T/out")" "$nb" \
	"with each of its $nb blocks"
fresh
pk=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name FROM packs k ORDER BY k.size DESC LIMIT 1")
size=$(stat -c %s "$T/p/tank/packs/$pk")
truncate -s $((size - 1000)) "$T/p/tank/packs/$pk"
run ferry scrub -v tank
likes "$rc:$(cat "$T/out")" "^5:.*pack '$pk' is truncated: $((size - 1000)) bytes, its index reaches $size" \
	"a truncated pack is reported"
likes "$(cat "$T/out")" "in pack '$pk' at offset [0-9]+ is damaged: it lies past the end of its pack" \
	"and the block past its end"
fresh
head -c 5000 /dev/urandom >"$T/p/tank/packs/00000000deadbeef.pack"
run ferry scrub tank
likes "$rc:$(cat "$T/out")" "^0:.*errors: No known data errors
note: 1 pack file \(4.88K\) the catalogue does not name: 'ferry gc tank' removes it$" \
	"an orphan pack is noted, not an error: exit 0"
# an index row past the size the catalogue recorded for its pack
fresh
# (the newest pack with blocks: a pack of nodes or a checkpoint has no index rows)
sqlite3 "$T/p/tank/catalog.db" "UPDATE packs SET size = size - 100 WHERE id = (SELECT max(pack_id) FROM blocks)"
run ferry scrub -v tank
likes "$rc:$(cat "$T/out")" "^5:.*index rows reach [0-9]+, past the [0-9]+ bytes the catalogue recorded" \
	"index rows past a pack's recorded end are reported"
# space figures that do not match the blocks
fresh
sqlite3 "$T/p/tank/catalog.db" "UPDATE snapshots SET referenced = referenced + 1 WHERE name = 'a'"
run ferry scrub -v tank
likes "$rc:$(cat "$T/out")" "^5:.*snapshot 'tank/fs@a' records referenced [0-9]+ and logicalreferenced [0-9]+, its blocks sum to" \
	"a snapshot's wrong space figures are reported"
# garbage is noted
fresh
ferry destroy tank/fs@b >/dev/null
run ferry scrub tank
likes "$rc:$(cat "$T/out")" "^0:.*note: [0-9]+ blocks \([0-9.]+[KM]?\) no snapshot references: 'ferry gc tank' frees them" \
	"blocks no snapshot references are noted (gc frees them), exit 0"

# ---- -s stops, the next scrub continues --------------------------------------------
mkdir -p "$T/bigsrc"
for i in 1 2 3 4 5 6 7 8; do head -c 3000000 /dev/urandom >"$T/bigsrc/f$i"; done
ferry pool create -o compression=off big "$T/p/big"
ferry create -o source="$T/bigsrc" big/fs
ferry snapshot big/fs@s
# one damaged block early in the pass: found before the stop, kept after it
first=$(sqlite3 "$T/p/big/catalog.db" "SELECT k.name || ' ' || (b.offset + 100) FROM blocks b JOIN packs k ON k.id = b.pack_id ORDER BY k.id, b.offset LIMIT 1")
python3 -c "
import sys; n, o = sys.argv[1], int(sys.argv[2])
f = open(sys.argv[3] + '/' + n, 'r+b'); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 4]))" $first "$T/p/big/packs"
refused 1 "no scrub of pool 'big' is running" "scrub -s with none running: exit 1, one line" ferry scrub -s big
# scanning POOL: waits (up to 30 s) until a scrub of POOL is scanning and
# has checkpointed some progress, whatever the machine's load
scanning() {
	for _w in $(seq 1 300); do
		[ "$(sqlite3 "$T/p/$1/catalog.db" "SELECT state = 1 AND bytes > 0 FROM scrub_state" 2>/dev/null)" = 1 ] && return 0
		sleep 0.1
	done
	diag "no scrub of $1 got going"
}
"$FERRY" scrub --limit-rate 8M big >"$T/bg.out" 2>&1 &
bg=$!
scanning big
run ferry scrub -s big
is "$rc:$(cat "$T/err")" "0:" "scrub -s stops the running scrub"
wait $bg
is "$?" 5 "the stopped scrub exits 5: it had found damage"
likes "$(cat "$T/bg.out")" "scrub stopped: 'ferry scrub big' continues it" "and says how to continue"
run ferry pool status big
likes "$(cat "$T/out")" "  scan: scrub paused since .*
	scrub started on .*
	[0-9.]+M scanned, [0-9]+ blocks, 1 errors so far" "pool status: scrub paused, what it scanned, its error"
done1=$(sqlite3 "$T/p/big/catalog.db" "SELECT bytes FROM scrub_state")
total=$(sqlite3 "$T/p/big/catalog.db" "SELECT sum(psize + 48) FROM blocks")
[ "$done1" -gt 0 ] && [ "$done1" -lt "$total" ] && ok "it stopped part way ($done1 of $total bytes)" ||
	not_ok "it stopped part way ($done1 of $total bytes)"
"$FERRY" scrub --json big >"$T/j"
likes "$?:$(python3 -c 'import json,sys; d=json.load(sys.stdin)["pools"]["big"]; print(d["resumed_at"], d["scan"]["state"], d["scan"]["bytes_checked"], len(d["errors"]), d["errors"][0]["files"])' <"$T/j")" \
	"^5:$done1 finished $total 1 \['big/fs@s:/f[1-8]'\]$" \
	"the next scrub continues from there, keeps the damage found before the stop (with its file), and finishes"
# a scrub killed part way: the next one continues from its last checkpoint
run ferry scrub big
"$FERRY" scrub --limit-rate 8M big >/dev/null 2>&1 &
bg=$!
scanning big
kill -9 $bg
wait $bg 2>/dev/null
likes "$(ferry pool status big)" "scrub interrupted \(started on .*\); 'ferry scrub big' continues it" \
	"pool status: a killed scrub is interrupted"
"$FERRY" scrub --json big >"$T/j"
is "$?:$(python3 -c 'import json,sys; d=json.load(sys.stdin)["pools"]["big"]; print(d["resumed_at"] > 0, d["scan"]["state"], len(d["errors"]))' <"$T/j")" \
	"5:True finished 1" "the scrub after a kill -9 continues and finishes"
# the pool is as it was: it restores (but for the damaged file) and gc has nothing to do
run ferry gc -v big
likes "$rc:$(cat "$T/out")" "^0:freed 0 blocks \(0B\), 0 nodes; packs: 0 deleted, 0 rewritten, 0 orphans removed$" \
	"after the stopped and the killed scrubs, gc has nothing to collect"
done_testing
