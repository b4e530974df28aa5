#!/bin/sh
# Pack version 3 (docs/ferry-nodes.md): every record ends with a CRC-32C of
# its header and payload, and `ferry scrub` checks blocks by it, without
# decoding; `--deep` also decodes and hashes. What each finds:
# - a flip in a payload, in a header byte, in the CRC itself: both;
# - bytes that were wrong before they were written (a payload changed and
#   its CRC made to match, as a compressor fault would leave): --deep only,
#   which is why it exists (docs/ferry.8, SCRUB);
# - a pack of version 2 (written by ferry before the CRCs, kept as it is):
#   its blocks are decoded and hashed by the plain scrub too.
. "$(dirname "$0")/lib.sh"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
S="$T/src"
mkdir -p "$T/p" "$S"
seq 1 40000 >"$S/numbers"
head -c 60000 /dev/urandom >"$S/random"
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
cp -a "$S" "$TS/a"
for f in "$T/p/tank/packs/"*.pack; do
	v=$(od -An -tu4 -j8 -N4 "$f" | tr -d ' ')
	[ "$v" = 3 ] || not_ok "pack $f is of version $v"
done
ok "new packs are of version 3"
run ferry scrub tank
is "$rc" 0 "a clean pool: scrub exit 0"
run ferry scrub --deep tank
is "$rc" 0 "a clean pool: scrub --deep exit 0"
cp -a "$T/p/tank" "$T/clean"
fresh() { rm -rf "$T/p/tank"; cp -a "$T/clean" "$T/p/tank"; }
# the lz4 block of 'numbers' at offset 16384 (the second record)
h=$(tail -c +16385 "$S/numbers" | head -c 16384 | $PY -c 'import hashlib, sys; print(hashlib.blake2b(sys.stdin.buffer.read(), digest_size=32).hexdigest())')
loc=$(sqlite3 "$T/p/tank/catalog.db" "SELECT k.name || ' ' || b.offset || ' ' || b.psize FROM blocks b
	JOIN packs k ON k.id = b.pack_id WHERE b.hash = x'$h'")
set -- $loc
pk=$1 off=$2 ps=$3
# damage AT: one bit of the byte at AT in pk; with 'crc', the block's CRC is
# made to match its (damaged) bytes
damage() {
	if [ "${2:-}" = crc ]; then
		$PY "$FERRY_SRC/tests/cli/scrub_lib.py" flip-at "$T/p/tank/packs/$pk" "$1" "$off" "$ps"
	else
		$PY "$FERRY_SRC/tests/cli/scrub_lib.py" flip-at "$T/p/tank/packs/$pk" "$1"
	fi
}
has() { grep -q -- "$1" "$T/out" && echo y; }
both() { # AT DESC: scrub and scrub --deep both report the block, with the file
	fresh
	damage "$1"
	run ferry scrub -v tank
	a="$rc:$(has "tank/fs@a:/numbers")"
	run ferry scrub -v --deep tank
	is "$a $rc:$(has "tank/fs@a:/numbers")" "5:y 5:y" "$2: scrub and scrub --deep report it, with its file"
}
both $((off + 48 + 100)) "a flipped payload byte"
both $((off + 48 + ps + 2)) "a flipped byte of the block's CRC"
both $((off + 5)) "a flipped level byte of the block's header"
fresh
damage $((off + 48 + 100)) crc
run ferry scrub -v tank
is "$rc" 0 "bytes wrong before they were written, with a CRC of them: the plain scrub cannot see it"
run ferry scrub -v --deep tank
is "$rc:$(has "tank/fs@a:/numbers")" "5:y" "scrub --deep finds it, with its file"
like "$(cat "$T/out")" "does not decode|does not match its hash|fails its hash" "... as a decode or hash failure"

# packs without CRCs (version 1 here, tests/cli/pool-v1.tar.gz; version 2
# is read the same way): the plain scrub decodes and hashes their blocks
mkdir -p "$T/p/old"
tar -C "$T/p/old" -xzf "$FERRY_SRC/tests/cli/pool-v1.tar.gz"
chmod -R go= "$T/p/old"
ferry pool import "$T/p/old" old
run ferry scrub old
is "$rc" 0 "a clean pool of version-1 packs: scrub exit 0"
loc=$(sqlite3 "$T/p/old/catalog.db" "SELECT k.name || ' ' || b.offset || ' ' || b.psize FROM blocks b
	JOIN packs k ON k.id = b.pack_id WHERE b.psize > 200 ORDER BY b.id LIMIT 1")
set -- $loc
v=$(od -An -tu4 -j8 -N4 "$T/p/old/packs/$1" | tr -d ' ')
$PY -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x10]))" \
	"$T/p/old/packs/$1" $(($2 + 48 + $3 / 2))
run ferry scrub -v old
is "$v:$rc:$(has "in pack '$1' at offset $2 is damaged: its content does not match its hash")" "1:5:y" \
	"a version-1 pack: the plain scrub decodes and hashes its blocks and finds a flipped payload byte"
ferry pool upgrade old >/dev/null
echo new >"$T/newfile"
mkdir -p "$T/src2"; cp "$T/newfile" "$T/src2/"
ferry snapshot --from "$T/src2" old/fs@c
n3=0
for f in "$T/p/old/packs/"*.pack; do
	[ "$(od -An -tu4 -j8 -N4 "$f" | tr -d ' ')" = 3 ] && n3=$((n3 + 1))
done
[ "$n3" -gt 0 ] && ok "after pool upgrade, new packs are of version 3 ($n3), the old ones kept" ||
	not_ok "no version-3 pack after upgrade and a snapshot"

# garbage: a block no snapshot references, left in a pack gc keeps (most of
# it is live). Its damage (as a repair leaves the copy it replaced) harms
# nothing and is not reported; the node records next to it still are.
G="$T/gsrc"
mkdir -p "$G"
head -c 200000 /dev/urandom >"$G/keep"
head -c 9000 /dev/urandom >"$G/gone"
ferry pool create -o compression=off gar "$T/p/gar"
ferry create -o source="$G" -o recordsize=16K gar/fs
ferry snapshot gar/fs@one
rm "$G/gone"
ferry snapshot gar/fs@two
gloc=$(sqlite3 "$T/p/gar/catalog.db" "SELECT k.name || ' ' || b.offset FROM blocks b JOIN packs k ON k.id = b.pack_id
	WHERE b.psize = 9000")
ferry destroy gar/fs@one
ferry gc gar >/dev/null
set -- $gloc
is "$(sqlite3 "$T/p/gar/catalog.db" "SELECT count(*) FROM blocks WHERE psize = 9000"):$(test -f "$T/p/gar/packs/$1" && echo kept)" \
	"0:kept" "a garbage block in a pack gc keeps"
$PY -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x21]))" \
	"$T/p/gar/packs/$1" $(($2 + 4))
run ferry scrub -v gar
is "$rc" 0 "a damaged header of a garbage block: not reported ($(sed -n 3p "$T/out"))"

# two neighbouring node records both damaged: each is reported (the walk
# steps over a damaged record by its length when the next header parses
# there; resyncing to the next good record skipped the second one)
fresh
two=$($PY - "$T/p/tank/packs" <<'EOF2'
import os, struct, sys
d = sys.argv[1]
for name in sorted(os.listdir(d)):
    path = os.path.join(d, name)
    b = bytearray(open(path, 'rb').read())
    pos, recs = 16, []
    while pos + 44 <= len(b) and b[pos:pos + 4] == b'FNOD':
        n = struct.unpack_from('<I', b, pos + 8)[0]
        recs.append(pos)
        pos += 44 + n + 4
    if len(recs) >= 2 and pos == len(b):
        for r in recs[:2]:
            b[r + 44] ^= 0x10  # the first byte of each node's bytes
        open(path, 'wb').write(b)
        print(name, recs[0], recs[1])
        break
EOF2
)
set -- $two
is "$#" 3 "a node pack with two neighbouring node records, both flipped ($two)"
"$FERRY" scrub --json tank >"$T/j"
is "$?:$($PY -c 'import json,sys; e=json.load(sys.stdin)["pools"]["tank"]["errors"]; print(sorted((x["kind"], x["offset"]) for x in e))' <"$T/j")" \
	"5:[('record', $2), ('record', $3)]" "both damaged neighbours reported, each at its offset"

fresh
ferry pool create control "$T/p/control"
ferry create -o source="$TS/a" -o recordsize=16K -o compression=lz4 control/fs
ferry snapshot control/fs@a
after_check tank control "scrubbed with and without --deep"
done_testing
