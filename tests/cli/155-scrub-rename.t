#!/bin/sh
# Issue 15, the scrub's file list after a rename: the snapshots and
# bookmarks that use a damage are kept by id and guid, not by name, so
# `pool status -v` and `scrub --json` name them as they are called now
# (after `ferry rename` of the dataset or the snapshot), drop one destroyed
# since, and a log kept by name by an older ferry is replaced by the next scrub.
. "$(dirname "$0")/lib.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
S="$T/src"
mkdir -p "$T/p" "$S/d"
seq 1 30000 >"$S/numbers"
head -c 50000 /dev/urandom >"$S/d/random"
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
cp -a "$S" "$TS/a"
echo more >"$S/d/more"
ferry snapshot tank/fs@b
cp -a "$S" "$TS/b"
ferry bookmark tank/fs@a tank/fs#mark

# the first block of 'numbers' (in both snapshots), and the blocklist node
# of d/random (in both snapshots and the bookmark's tree)
h=$(head -c 16384 "$S/numbers" | python3 -c 'import hashlib, sys; print(hashlib.blake2b(sys.stdin.buffer.read(), digest_size=32).hexdigest())')
blk=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name || ' ' || (b.offset + 60) FROM blocks b
	JOIN packs k ON k.id = b.pack_id WHERE b.hash = x'$h'")
python3 -c "
import sys; n, o = sys.argv[1], int(sys.argv[2])
f = open(sys.argv[3] + '/' + n, 'r+b'); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 2]))" $blk "$T/p/tank/packs"
listing() { ferry pool status -v tank | sed -n 's/^        \(tank[^ ]*\)$/\1/p' | sort -u | tr '\n' ' '; }
run ferry scrub tank
is "$rc" 5 "a damaged block: exit 5"
before=$(listing)
like "$before" "tank/fs@a:/numbers tank/fs@b:/numbers" "the damaged file is listed in both snapshots"

ferry rename tank/fs tank/home
ferry rename tank/home@a tank/home@first
is "$(listing)" "tank/home@b:/numbers tank/home@first:/numbers " \
	"after renaming the dataset and a snapshot: the names of now, none stale"
"$FERRY" scrub --json tank >/dev/null 2>&1
"$FERRY" pool status --json tank >"$T/j"
is "$(python3 -c 'import json,sys; print(sorted(set(f for e in json.load(sys.stdin)["pools"]["tank"]["errors"] for f in e["files"])))' <"$T/j")" \
	"['tank/home@b:/numbers', 'tank/home@first:/numbers']" "scrub again, then pool status --json: the same names"
ferry rename tank/home tank/fs2
is "$(listing)" "tank/fs2@b:/numbers tank/fs2@first:/numbers " "a rename after the scrub: pool status follows it"
bid=$(sqlite3 "$T/p/tank/catalog.db" "SELECT id FROM snapshots WHERE name = 'b'")
ferry destroy tank/fs2@b
is "$(listing)" "tank/fs2@first:/numbers " "a snapshot destroyed since the scrub is no longer listed"
# a new snapshot takes the destroyed one's row id (the highest; ids are
# not AUTOINCREMENT): the guid tells them apart
ferry snapshot tank/fs2@new
is "$(sqlite3 "$T/p/tank/catalog.db" "SELECT id FROM snapshots WHERE name = 'new'"):$(listing)" \
	"$bid:tank/fs2@first:/numbers " "a later snapshot with the destroyed one's row id is not listed"

# a damaged node under the bookmark too: the bookmark is listed by its name of now
node=$(sqlite3 "$T/p/tank/catalog.db" "SELECT hex(hash) FROM nodes WHERE type = 2 ORDER BY hash LIMIT 1")
python3 - "$T/p/tank/catalog.db" "$node" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); h = bytes.fromhex(sys.argv[2])
d = bytearray(db.execute("SELECT data FROM nodes WHERE hash = ?", (h,)).fetchone()[0]); d[-1] ^= 1
db.execute("UPDATE nodes SET data = ? WHERE hash = ?", (bytes(d), h)); db.commit()
EOF
run ferry scrub tank
like "$rc:$(listing)" "^5:.*tank/fs2#mark:/" "a damaged node of the bookmark's tree: the bookmark is listed"
ferry rename tank/fs2 tank/fs3
like "$(listing)" "tank/fs3#mark:/" "and follows its dataset's rename"
unlike() { case "$1" in *"$2"*) not_ok "$3"; diag "got: $1" ;; *) ok "$3" ;; esac; }
unlike "$(listing)" "fs2" "no stale name left"

# ---- a log kept by name (an older ferry's scrub_users): listed as it was kept
# until the next scrub, which records the users by id again ---------------------
sqlite3 "$T/p/tank/catalog.db" "CREATE TABLE scrub_users(err_id INTEGER NOT NULL, snap TEXT NOT NULL, path TEXT NOT NULL);
	INSERT INTO scrub_users SELECT err_id, 'tank/old@x', path FROM scrub_uses;
	DROP TABLE scrub_uses;"
like "$(listing)" "^tank/old@x:/" "an older log is listed as it was kept"
run ferry scrub tank
is "$rc:$(sqlite3 "$T/p/tank/catalog.db" "SELECT count(*) FROM sqlite_master WHERE name = 'scrub_users'")" "5:0" \
	"the next scrub drops the older table"
like "$(listing)" "^tank/fs3#mark:/" "and lists the names of now"
unlike "$(listing)" "tank/old" "none of the older names"

# ---- the damage undone: a clean scrub, then the after-check against a pool
# that got the same trees, snapshots and bookmark under the names of now
python3 -c "
import sys; n, o = sys.argv[1], int(sys.argv[2])
f = open(sys.argv[3] + '/' + n, 'r+b'); f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 2]))" $blk "$T/p/tank/packs"
python3 - "$T/p/tank/catalog.db" "$node" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1]); h = bytes.fromhex(sys.argv[2])
d = bytearray(db.execute("SELECT data FROM nodes WHERE hash = ?", (h,)).fetchone()[0]); d[-1] ^= 1
db.execute("UPDATE nodes SET data = ? WHERE hash = ?", (bytes(d), h)); db.commit()
EOF
run ferry scrub tank
is "$rc:$(listing)" "0:" "the flips undone: scrub is clean and pool status lists no file"
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry create -o source="$TS/a" -o recordsize=16K ctl/fs3
ferry snapshot ctl/fs3@first
ferry bookmark ctl/fs3@first ctl/fs3#mark
ferry snapshot --from "$TS/b" ctl/fs3@new
after_check -e "/fs3@first=$TS/a" -e "/fs3@new=$TS/b" tank ctl "renamed, destroyed and snapshotted with a scrub log"
done_testing
