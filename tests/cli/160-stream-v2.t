#!/bin/sh
# Stream format version 2 (ferry-stream(5), The chain): ferry send writes
# it in every mode, and the chain takes a WRITE's data and a NODE's bytes
# by CRC-32C instead of hashing them a second time (each is named by a
# BLAKE2b hash the receiver checks anyway). Version 1 is still read
# (tests/vectors; 58-vectors-recv.t). Here:
# - send, send -c, send -i, send -I and send -R write version 2 records;
# - a kept receive (-c lz4 into lz4) of a full and an incremental ends
#   with after_check against the source pool, which captured the data;
# - a bit flipped in a block's data in transit is refused at its record
#   ("trailer mismatch", the CRC), nothing committed, and recv -s keeps the
#   records before it: send -t resumes and the snapshot restores identical;
# - new data under a correct chain (a lying sender) is refused by the
#   block's own hash, and the pool is unchanged.
. "$(dirname "$0")/lib.sh"
PRNG="$FERRY_TOOLS/prng"
V=$FERRY_SRC/tests/vectors
S=$T/src
mkdir -p "$S/t" "$S/b" "$T/p"
for i in 1 2 3 4 5 6; do "$PRNG" text "$i" $((i * 150000)) >"$S/t/f$i"; done
"$PRNG" bin 9 700000 >"$S/b/rnd"
"$PRNG" text 10 3000000 >"$S/big"
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@a
"$PRNG" text 11 200000 >"$S/t/f2"
"$PRNG" text 12 90000 >"$S/t/new"
ferry snapshot tank/fs@b
ferry pool create -o compression=lz4 bk "$T/p/bk"

# versions DUMP: the version lines of a dump, on one line
versions() { grep -E '^[[:space:]]version = ' "$1" | tr -d ' \t' | tr '\n' ' '; }

ferry send -c tank/fs@a >"$T/full.s"
ferry send -c -i @a tank/fs@b >"$T/incr.s"
ferry dump "$T/full.s" >"$T/d"
is "$(versions "$T/d")" "version=2 " "send -c writes format version 2"
ferry send tank/fs@a | ferry dump >"$T/d"
is "$(versions "$T/d")" "version=2 " "send (logical blocks) writes version 2"
ferry dump "$T/incr.s" >"$T/d"
is "$(versions "$T/d")" "version=2 " "send -i writes version 2"
ferry send -I @a tank/fs@b | ferry dump >"$T/d"
like "$(versions "$T/d")" "^(version=2 )+$" "send -I: the PACKAGE and every BEGIN are version 2"
ferry send -R tank/fs@b | ferry dump >"$T/d"
like "$(versions "$T/d")" "^version=2 version=2 version=2 $" "send -R: the PACKAGE and both BEGINs are version 2"

# ---- kept receive of version 2 -------------------------------------------------
run "$FERRY" recv -v bk/fs <"$T/full.s"
is "$rc" 0 "recv of a version 2 -c stream into lz4"
like "$(grep 'blocks:' "$T/out")" " [1-9][0-9]* kept" "its lz4 blocks are kept"
run "$FERRY" recv -v bk/fs <"$T/incr.s"
is "$rc" 0 "recv of a version 2 -c incremental"
after_check bk/fs tank/fs "kept version 2 full and incremental"

# ---- a bit flipped in a block's data --------------------------------------------
# flipat STREAM N OUT: OUT is STREAM with one bit flipped 100 bytes into
# the data of its Nth WRITE; prints that WRITE's record number
flipat() {
	python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
s = bytearray(open(sys.argv[1], "rb").read())
want, off, i, n = int(sys.argv[2]), 0, 0, 0
while off < len(s):
    t, f, ln = struct.unpack_from("<HHI", s, off)
    if t == 4:
        n += 1
        if n == want:
            s[off + 8 + 48 + 100] ^= 0x04
            open(sys.argv[3], "wb").write(s)
            print(i)
            sys.exit(0)
    off += 8 + ln + 16
    i += 1
sys.exit(1)
PY
}
ferry pool create -o compression=lz4 rs "$T/p/rs"
ferry list -H -r -t all -o name rs >"$T/before"
rec=$(flipat "$T/full.s" 4 "$T/flip.s")
run "$FERRY" recv rs/fs <"$T/flip.s"
like "$rc:$(cat "$T/err")" "^1:.*record $rec \(WRITE\): trailer mismatch" \
	"a flipped data bit is refused at its WRITE (record $rec) by the chain's CRC"
is "$(ferry list -H -r -t all -o name rs)" "$(cat "$T/before")" "nothing committed"
run "$FERRY" recv -s rs/fs <"$T/flip.s"
like "$rc:$(cat "$T/err")" "^1:.*record $rec \(WRITE\): trailer mismatch.*kept" \
	"with -s the same refusal keeps what came before it"
tok=$(ferry get -H -o value receive_resume_token rs/fs)
like "$tok" "^1-[0-9a-f]+$" "a resume token"
ferry send -t "$tok" >"$T/rest.s"
like "$(( $(wc -c <"$T/rest.s") < $(wc -c <"$T/full.s") ))" "^1$" "the resumed stream is shorter than the full one"
run "$FERRY" recv -s rs/fs <"$T/rest.s"
is "$rc:$(cat "$T/err")" "0:" "the resumed stream completes the receive"
rm -rf "$TS/r1" "$TS/r2"
ferry restore rs/fs@a "$TS/r1"
ferry restore tank/fs@a "$TS/r2"
if "$FERRY_TOOLS/treecmp" "$TS/r1" "$TS/r2" >"$T/out" 2>&1; then
	ok "the resumed snapshot restores identical to the source's"
else
	not_ok "the resumed snapshot restores identical to the source's"; diag "$(cat "$T/out")"
fi
run ferry gc rs
is "$rc" 0 "gc after the resumed receive"

# ---- a lying sender: new data, correct chain ------------------------------------------
ferry list -H -r -t all -o name bk >"$T/before"
run "$FERRY" recv bk/liar <"$V/bad/v2-write-data-reframed.stream"
like "$rc:$(cat "$T/err")" "^1:.*block (hash|content) does not match" \
	"data under a correct version 2 chain but not its hash is refused"
is "$(ferry list -H -r -t all -o name bk)" "$(cat "$T/before")" "and the pool is unchanged"
done_testing
