#!/bin/sh
# Every block that leaves the pool is checked, whatever the send mode: a
# damaged block makes send fail with one line that names the block, its
# pack and offset, the snapshot and the file that uses it (send -c used to
# copy a damaged payload into the stream and exit 0); restore names the
# file, the block, its pack and offset.
. "$(dirname "$0")/lib.sh"
mkdir -p "$T/p" "$T/src/sub"
seq 1 300000 >"$T/src/sub/numbers"
for codec in lz4 gzip-6 off; do
	ferry pool create -o compression=$codec p$codec "$T/p/$codec"
	ferry create -o source="$T/src" -o recordsize=64K p$codec/fs
	ferry snapshot p$codec/fs@a
	echo more >>"$T/src/sub/numbers"
	ferry snapshot p$codec/fs@b
done
# damage POOL old|new: flips one payload byte of a block of sub/numbers,
# one @a and @b share (old) or the one only @b has (new, its changed last
# record: an incremental from @a sends it); prints its pack name
damage() {
	_db="$T/p/$1/catalog.db"
	_in=$([ "$2" = new ] && echo "NOT IN" || echo "IN")
	_row=$(sqlite3 "$_db" "SELECT k.name, b.offset, b.psize FROM blocks b JOIN packs k
		ON k.id = b.pack_id JOIN snap_blocks sb ON sb.block_id = b.id
		JOIN snapshots s ON s.id = sb.snap_id WHERE s.name = 'b' AND b.lsize < 400000
		AND b.id $_in (SELECT block_id FROM snap_blocks WHERE snap_id =
		(SELECT id FROM snapshots WHERE name = 'a')) ORDER BY b.id LIMIT 1")
	_pack=${_row%%|*} _rest=${_row#*|}
	_off=${_rest%%|*} _psize=${_rest#*|}
	python3 - "$T/p/$1/packs/$_pack" $((_off + 48 + _psize / 2)) <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x5a]))
PY
	echo "$_pack"
}
for codec in lz4 gzip-6 off; do
	pk=$(damage $codec new)
	for mode in "" "-c" "--compress=gzip-1" "-c --compress=lz4" "-i @a" "-c -i @a"; do
		refused 1 "block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged: .*; p$codec/fs@b uses it in 'sub/numbers'" \
			"$codec pool: send $mode of a damaged block fails, naming block, pack, offset and file" \
			"$FERRY" send $mode p$codec/fs@b
	done
	refused 1 "restoring 'sub/numbers': block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged" \
		"$codec pool: restore of the damaged block fails, naming file, block, pack and offset" \
		"$FERRY" restore p$codec/fs@b "$T/r-$codec"
	refused 1 "restoring 'sub/numbers': block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged" \
		"$codec pool: restore --format tar of it fails the same way" \
		sh -c "'$FERRY' restore --format tar p$codec/fs@b >/dev/null"
	pk=$(damage $codec old)
	for mode in "" "-c" "-c --compress=gzip-1"; do
		refused 1 "block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged: .*; p$codec/fs@a uses it in 'sub/numbers'" \
			"$codec pool: send $mode of another damaged block fails the same way" \
			"$FERRY" send $mode p$codec/fs@a
	done
done
# the other blocks are intact: a snapshot that does not use the damaged one
# still sends
ferry create -o source="$T/src/sub" plz4/other 2>/dev/null
rm -f "$T/src/sub/numbers"; echo x >"$T/src/sub/x"
ferry snapshot plz4/other@x
run sh -c "'$FERRY' send -c plz4/other@x >/dev/null"
is "$rc" 0 "a snapshot that does not use the damaged block still sends"
# a small block (a file of 1,500 bytes): with --compress its check and rule
# run on the thread that walks, not on a worker (send/emit.c inline_max),
# and its damage is reported the same way
mkdir -p "$T/small"
seq 1 1000 | head -c 1500 >"$T/small/tiny"
ferry pool create -o compression=off psmall "$T/p/small"
ferry create -o source="$T/small" psmall/fs
ferry snapshot psmall/fs@a
_row=$(sqlite3 "$T/p/small/catalog.db" "SELECT k.name, b.offset, b.psize FROM blocks b
	JOIN packs k ON k.id = b.pack_id WHERE b.lsize = 1500")
pk=${_row%%|*} _rest=${_row#*|}
python3 - "$T/p/small/packs/$pk" $((${_rest%%|*} + 48 + 700)) <<'PY'
import sys
with open(sys.argv[1], 'r+b') as f:
    f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x5a]))
PY
for mode in "--compress=lz4" "-c --compress=gzip-1" "-c"; do
	refused 1 "block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged: .*; psmall/fs@a uses it in 'tiny'" \
		"send $mode of a damaged small block fails, naming block, pack, offset and file" \
		"$FERRY" send $mode psmall/fs@a
done
done_testing
