#!/bin/sh
# Issue 15, item 4: every read path names its damage in one stderr line:
# the block's hash, its pack and offset, and the file. tests/cli/56 covers
# payloads that fail their hash; here the damage read_stored meets before
# any payload: a flipped block header, a deleted pack file, a pack cut
# short (they named the pack but not the block, and send not the offset).
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/sub"
seq 1 200000 >"$T/src/sub/numbers"
ferry pool create tank "$T/p/tank"
ferry create -o source="$T/src" -o recordsize=64K tank/fs
ferry snapshot tank/fs@a
cp -a "$T/p/tank" "$T/clean"
fresh() { rm -rf "$T/p/tank"; cp -a "$T/clean" "$T/p/tank"; }
# the last block of sub/numbers: its pack and offset
row=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name, b.offset FROM blocks b JOIN packs k ON k.id = b.pack_id ORDER BY b.offset DESC LIMIT 1")
pk=${row%%|*} off=${row#*|}
# reads CASE [OFFSET]: every read path fails naming block, pack, offset
# (the damaged block's, else any) and file
reads() {
	_o=${2:-[0-9]+}
	for mode in "" "-c" "--compress=gzip-1"; do
		refused 1 "block [0-9a-f]{16} in pack '$pk' at offset $_o is damaged: .*; tank/fs@a uses it in 'sub/numbers'" \
			"$1: send $mode names the block, its pack, offset and the file" "$FERRY" send $mode tank/fs@a
	done
	refused 1 "restoring 'sub/numbers': block [0-9a-f]{16} in pack '$pk' at offset $_o is damaged" \
		"$1: restore names the file, block, pack and offset" "$FERRY" restore tank/fs@a "$TS/r"
	rm -rf "$TS/r"
	refused 1 "restoring 'sub/numbers': block [0-9a-f]{16} in pack '$pk' at offset $_o is damaged" \
		"$1: restore --format tar too" sh -c "'$FERRY' restore --format tar tank/fs@a >/dev/null"
	refused 1 "block [0-9a-f]{16} in pack '$pk' at offset $_o is damaged" \
		"$1: restore --file too" "$FERRY" restore --file sub/numbers tank/fs@a "$TS/r"
	rm -rf "$TS/r"
}
python3 -c "
import sys; f = open(sys.argv[1], 'r+b'); o = int(sys.argv[2]) + 20
f.seek(o); b = f.read(1); f.seek(o); f.write(bytes([b[0] ^ 1]))" "$T/p/tank/packs/$pk" "$off"
reads "a flipped block header" "$off"
fresh
size=$(stat -c %s "$T/p/tank/packs/$pk")
truncate -s $((size - 10)) "$T/p/tank/packs/$pk"
reads "a pack cut short" "$off"
fresh
rm "$T/p/tank/packs/$pk"
reads "a deleted pack"
done_testing
