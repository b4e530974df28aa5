#!/bin/sh
# A block a receive stores as it came (a -c stream into a pool of the
# stream's codec: kept) gets its pack record's CRC-32C from the stream's
# own check of that record (crc32c_combine of the header's CRC and the
# payload's), not from a second pass over its bytes. Every record of the
# packs such receives write must still match its CRC computed from
# scratch (scrub_lib.py check-crcs, bit by bit, every record of every
# pack), and `ferry scrub` must find nothing: a full receive, an
# incremental, one resumed after a cut; and, for contrast, receives that
# store other bytes than they got (a plain stream into lz4, -c into
# gzip-7), whose CRCs are computed the full way. Payloads of many lengths
# (1 byte to a whole 128 KiB record) reach every bit of the length the
# combination uses. Ends with after_check for each receiving pool.
. "$(dirname "$0")/lib.sh"
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
PRNG="$FERRY_TOOLS/prng"
S="$T/src"
mkdir -p "$T/p" "$S/small"
"$PRNG" text 1 700000 >"$S/text"
"$PRNG" bin 2 300000 >"$S/random"
seq 1 90000 >"$S/numbers"
for n in 1 2 3 7 8 9 63 64 65 255 256 4095 4096 4097 65535 65536 65537 131071; do
	"$PRNG" text $n $n >"$S/small/t$n"
done
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@a
cp -a "$S" "$TS/a"
"$PRNG" text 9 200000 >>"$S/text"
"$PRNG" text 10 5000 >"$S/small/new"
ferry snapshot tank/fs@b
cp -a "$S" "$TS/b"
ferry send -c tank/fs@a >"$T/a.c"
ferry send -c -i @a tank/fs@b >"$T/b.c"
ferry send tank/fs@a >"$T/a.plain"

# crcs_hold POOL WHAT: every record's CRC, and scrub
crcs_hold() {
	res=$($PY "$FERRY_SRC/tests/cli/scrub_lib.py" check-crcs "$T/p/$1")
	like "$res" "^[0-9]+ records, [1-9][0-9]* blocks, 0 bad$" "$2: every record matches its CRC-32C ($res)"
	run ferry scrub "$1"
	is "$rc" 0 "$2: scrub finds nothing"
}

# kept: a full -c stream, then its incremental, into an lz4 pool
ferry pool create -o compression=lz4 keep "$T/p/keep"
run sh -c "'$FERRY' recv -v keep/fs <'$T/a.c'"
is "$rc" 0 "a -c stream into an lz4 pool is received"
like "$(cat "$T/out")" "[1-9][0-9]* kept, 0 recompressed" "its blocks are kept as they came"
crcs_hold keep "kept, full"
run sh -c "'$FERRY' recv -v keep/fs <'$T/b.c'"
is "$rc" 0 "its incremental is received"
like "$(cat "$T/out")" "[1-9][0-9]* kept, 0 recompressed" "the incremental's blocks are kept"
crcs_hold keep "kept, incremental"

# kept, resumed: the full stream cut in the middle, received with -s,
# then completed from the token
ferry pool create -o compression=lz4 res "$T/p/res"
size=$(stat -c %s "$T/a.c")
head -c $((size / 2)) "$T/a.c" >"$T/cut"
ferry recv -s res/fs <"$T/cut" 2>/dev/null
tok=$(ferry get -H -o value receive_resume_token res/fs)
like "$tok" "^1-[0-9a-f]+$" "a cut -c stream leaves a resume token"
run sh -c "'$FERRY' send -t '$tok' | '$FERRY' recv -s res/fs"
is "$rc" 0 "the cut receive is completed from its token"
crcs_hold res "kept, resumed"

# recompressed: a plain stream into lz4, -c into gzip-7
ferry pool create -o compression=lz4 plain "$T/p/plain"
run sh -c "'$FERRY' recv plain/fs <'$T/a.plain'"
is "$rc" 0 "a plain stream into an lz4 pool is received"
crcs_hold plain "encoded by the receiver"
ferry pool create -o compression=gzip-7 gz "$T/p/gz"
run sh -c "'$FERRY' recv -v gz/fs <'$T/a.c'"
like "$(cat "$T/out")" "0 kept, [1-9][0-9]* recompressed" "-c lz4 into gzip-7 is recompressed"
crcs_hold gz "recompressed"

# controls that got the same snapshots in one go
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry send -R tank/fs@b | ferry recv ctl/fs
ferry pool create -o compression=lz4 ctl1 "$T/p/ctl1"
ferry send tank/fs@a | ferry recv ctl1/fs
ferry pool create -o compression=gzip-7 ctlg "$T/p/ctlg"
ferry send tank/fs@a | ferry recv ctlg/fs
after_check -e "/fs@a=$TS/a" -e "/fs@b=$TS/b" keep ctl "kept blocks, full and incremental"
after_check -e "/fs@a=$TS/a" res ctl1 "kept blocks, resumed"
after_check -e "/fs@a=$TS/a" plain ctl1 "blocks encoded by the receiver"
after_check -e "/fs@a=$TS/a" gz ctlg "blocks recompressed into gzip-7"
done_testing
