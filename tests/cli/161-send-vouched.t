#!/bin/sh
# send -c and --compress check a stored block by its pack's CRC-32C where
# the pack has one (version 3), instead of decoding and hashing it: the
# receiver decodes and hashes every block it takes (store/store.h,
# store_block_read_stored). What that changes, and what it must not:
# - bytes wrong before they were written (a payload changed and its CRC
#   made to match, as a compressor fault would leave): send -c and
#   --compress pass them on, and the receiver refuses the stream and
#   commits nothing; plain send and restore, which have no receiver after
#   them, still decode and hash, and refuse the block by name;
# - a flipped byte of the CRC alone (the payload whole): the block is
#   checked the full way, found whole, and sent; the copy received is
#   identical (after_check);
# - a flipped payload byte (the CRC does not match): send -c fails naming
#   the block, as tests/cli/56 checks for every mode;
# - packs of version 1 (no CRCs): send -c decodes and hashes, as before.
. "$(dirname "$0")/lib.sh"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
mkdir -p "$T/p" "$T/src/sub"
S="$T/src"
head -c 60000 /dev/urandom >"$S/random"
seq 1 40000 >"$S/sub/numbers"
for codec in lz4 off; do
	ferry pool create -o compression=$codec t$codec "$T/p/t$codec"
	ferry create -o source="$S" -o recordsize=16K t$codec/fs
	ferry snapshot t$codec/fs@a
	cp -a "$T/p/t$codec" "$T/clean-$codec"
done
# the block of sub/numbers at offset 16384 (its second record)
h=$(tail -c +16385 "$S/sub/numbers" | head -c 16384 | $PY -c 'import hashlib, sys; print(hashlib.blake2b(sys.stdin.buffer.read(), digest_size=32).hexdigest())')
# damage CODEC HOW: in pool tCODEC, one bit of that block's payload
# ('payload'), of its CRC tail ('tail'), or of its payload with the CRC
# made to match ('crc'); the pool is first put back as it was made
damage() {
	rm -rf "$T/p/t$1"
	cp -a "$T/clean-$1" "$T/p/t$1"
	loc=$(sqlite3 "$T/p/t$1/catalog.db" "SELECT k.name || ' ' || b.offset || ' ' || b.psize
		FROM blocks b JOIN packs k ON k.id = b.pack_id WHERE b.hash = x'$h'")
	set -- "$1" "$2" $loc
	case $2 in
	tail) $PY "$FERRY_SRC/tests/cli/scrub_lib.py" flip-at "$T/p/t$1/packs/$3" $(($4 + 48 + $5 + 1)) ;;
	payload) $PY "$FERRY_SRC/tests/cli/scrub_lib.py" flip-at "$T/p/t$1/packs/$3" $(($4 + 48 + $5 / 2)) ;;
	crc) $PY "$FERRY_SRC/tests/cli/scrub_lib.py" flip-at "$T/p/t$1/packs/$3" $(($4 + 48 + $5 / 2)) "$4" "$5" ;;
	esac
	echo "$3"
}
for v in "$T/p/"t*/packs/*.pack; do
	[ "$(od -An -tu4 -j8 -N4 "$v" | tr -d ' ')" = 3 ] || not_ok "pack $v is not of version 3"
done

# a pool to receive into, with something in it that must stay as it was
ferry pool create -o compression=lz4 dst "$T/p/dst"
ferry create -o source="$S" dst/keep
ferry snapshot dst/keep@k
before=$(figures dst)

# bytes wrong before they were written, their CRC matching
for c in "lz4 -c" "off -c" "off --compress=gzip-1"; do
	codec=${c%% *} mode=${c#* }
	pk=$(damage $codec crc)
	run sh -c "'$FERRY' send $mode t$codec/fs@a >'$T/s'"
	is "$rc" 0 "$codec pool, send $mode: a block its CRC vouches for is not decoded and hashed again"
	run ferry recv dst/fs <"$T/s"
	like "$rc:$(cat "$T/err")" "^1:.*(does not match its hash|does not decode)" \
		"$codec pool, send $mode: the receiver refuses the wrong block"
	is "$(figures dst)" "$before" "... and the receiving pool is as it was"
	refused 1 "block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged: .*; t$codec/fs@a uses it in 'sub/numbers'" \
		"$codec pool: plain send still decodes and hashes, and names the block and file" \
		"$FERRY" send t$codec/fs@a
	refused 1 "restoring 'sub/numbers': block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged" \
		"$codec pool: restore still decodes and hashes" \
		"$FERRY" restore t$codec/fs@a "$T/r"
	rm -rf "$T/r"
done
run ferry scrub --deep tlz4
is "$rc" 5 "scrub --deep finds the wrong bytes the CRC vouches for"

# a flipped payload byte: the CRC does not vouch, the full check refuses
for codec in lz4 off; do
	pk=$(damage $codec payload)
	refused 1 "block [0-9a-f]{16} in pack '$pk' at offset [0-9]+ is damaged: .*; t$codec/fs@a uses it in 'sub/numbers'" \
		"$codec pool: send -c of a payload its CRC does not match fails, naming it" \
		"$FERRY" send -c t$codec/fs@a
done

# a flipped CRC byte, the payload whole: checked the full way, and sent
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
for codec in lz4 off; do
	rm -rf "$T/p/t$codec"; cp -a "$T/clean-$codec" "$T/p/t$codec"
	ferry send -c t$codec/fs@a | ferry recv ctl/$codec
	damage $codec tail >/dev/null
	run sh -c "'$FERRY' send -c t$codec/fs@a | '$FERRY' recv dst/$codec"
	is "$rc" 0 "$codec pool: send -c of a block whose CRC byte flipped checks it the full way and sends it"
done
ferry destroy -r dst/keep
after_check dst ctl "received from a pack whose CRC byte flipped"

# packs of version 1 (no CRCs): send -c decodes and hashes them
mkdir -p "$T/p/old"
tar -C "$T/p/old" -xzf "$FERRY_SRC/tests/cli/pool-v1.tar.gz"
chmod -R go= "$T/p/old"
ferry pool import "$T/p/old" old
snap=$(ferry list -H -t snapshot -o name -r old/fs | head -1)
run sh -c "'$FERRY' send -c $snap >/dev/null"
is "$rc" 0 "a version-1 pool: send -c of a clean snapshot"
loc=$(sqlite3 "$T/p/old/catalog.db" "SELECT k.name || ' ' || b.offset || ' ' || b.psize FROM blocks b
	JOIN packs k ON k.id = b.pack_id JOIN snap_blocks sb ON sb.block_id = b.id
	JOIN snapshots s ON s.id = sb.snap_id WHERE b.psize > 200 AND s.name = '${snap#*@}'
	ORDER BY b.id LIMIT 1")
set -- $loc
v=$(od -An -tu4 -j8 -N4 "$T/p/old/packs/$1" | tr -d ' ')
$PY -c "
import sys; f = open(sys.argv[1], 'r+b'); f.seek(int(sys.argv[2])); b = f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 0x10]))" \
	"$T/p/old/packs/$1" $(($2 + 48 + $3 / 2))
run sh -c "'$FERRY' send -c $snap >/dev/null"
like "$v:$rc:$(cat "$T/err")" "^1:1:.*block [0-9a-f]{16} in pack '$1' at offset $2 is damaged" \
	"a version-1 pack: send -c decodes and hashes its blocks, and refuses a flipped byte"
done_testing
