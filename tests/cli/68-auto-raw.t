#!/bin/sh
# Issue 12, server CPU: with `send --to URL --compress=auto` the client
# encodes every block with the target's codec, and a block that does not
# shrink by 12.5 % goes raw. The stream's HINT (ferry-stream(5)) says that
# its raw blocks were tried with that codec, so a receiver storing with
# exactly that codec stores them raw without compressing them again: the
# server's receive report counts 0 recompressed and 0 logical (tried)
# blocks. The same stream into a pool with another codec still
# recompresses; a sender that lies about having tried only gets blocks
# stored raw, never a block unchecked; after gc everything restores
# identical, with the space figures of a local receive of the same data.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
B=$FERRY_SRC/tests/vectors/bad
S=$T/src
mkdir -p "$S/rnd" "$S/z" "$S/txt"
"$PRNG" bin 1 3000000 >"$S/rnd/a"
"$PRNG" bin 2 700000 >"$S/rnd/b"
"$PRNG" text 3 2000000 >"$S/z/t"
gzip -9 -c "$S/z/t" >"$S/z/t.gz"
"$PRNG" text 4 1500000 >"$S/txt/plain"
"$PRNG" text 5 1200000 | gzip -1 >"$S/z/u.gz"
rm "$S/z/t"
ferry pool create tank "$T/tank"
ferry create -o source="$S" tank/a
ferry snapshot tank/a@s1
ferry pool create -o compression=gzip-7 bk "$T/bk"
ferry pool create -o compression=gzip-7 ctl "$T/ctl"
ferry pool create -o compression=gzip-7 loc "$T/loc"
ferry pool create -o compression=lz4 other "$T/other"
ferry pool create -o compression=gzip-7 liar "$T/liar"
ferry create bk/h
ferry create ctl/h
token client bk/h append
serve_start bk
export FERRY_TOKEN="$(tok client)"

# blocks N WHAT: the count before WHAT in the -v "blocks:" line of $T/out
blocks() { grep 'blocks:' "$T/out" | grep -oE "[0-9?]+ $1" | cut -d' ' -f1; }

# ---- over HTTP, --compress=auto into gzip-7 ----------------------------------------
run "$FERRY" send -v tank/a@s1 --to "$URL/bk/h/a"
is "$rc" 0 "send --to a gzip-7 server with --compress=auto"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"
like "$(cat "$T/err")" "stores blocks as gzip-7" "the client learnt the target's compression"
is "$(blocks 'logical compressed'):$(blocks recompressed)" "0:0" \
	"the server's report: 0 logical blocks compressed (tried), 0 recompressed"
like "$(blocks 'raw as tried')" '^[1-9][0-9]*$' "the random and gzipped files' blocks came raw and were stored untried"
like "$(blocks kept)" '^[1-9][0-9]*$' "the text's blocks came as gzip-7 and were kept"
serve_stop
is "$serve_rc" 0 "the server stopped cleanly"

# the control: the same data received locally through a pipe (logical
# blocks, compressed by the receiver)
ferry send tank/a@s1 | ferry recv ctl/h/a

# ---- the same stream, locally (send --compress=CODEC) ---------------------------------
ferry send --compress=gzip-7 tank/a@s1 >"$T/gz7.stream"
like "$(ferry dump "$T/gz7.stream" | sed -n '/^HINT/,/tried/p' | tr '\n\t' '  ')" \
	'^HINT record 1  size = 0 \(unknown\)  tried = gzip-7 $' \
	"send --compress=gzip-7 writes a HINT: raw blocks tried with gzip-7 (no estimate from a pipe)"
run ferry recv -v loc/a <"$T/gz7.stream"
is "$rc:$(blocks 'logical compressed'):$(blocks recompressed)" "0:0:0" \
	"received into gzip-7: nothing compressed again"
loc_tried=$(blocks 'raw as tried')
like "$loc_tried" '^[1-9][0-9]*$' "its raw blocks stored untried"
run ferry recv -v other/a <"$T/gz7.stream"
is "$rc:$(blocks 'raw as tried')" "0:0" "into an lz4 pool the claim does not apply: 0 stored untried"
is "$(blocks 'logical compressed')" "$loc_tried" "the raw blocks are tried with lz4"
like "$(blocks recompressed)" '^[1-9][0-9]*$' "and the gzip-7 ones recompressed to lz4"
ferry send --compress=lz4 tank/a@s1 >"$T/lz4.stream"
run ferry recv -v loc/b <"$T/lz4.stream"
is "$rc:$(blocks 'raw as tried')" "0:0" "a stream tried with lz4 into gzip-7: nothing stored untried"
ferry send -c --compress=gzip-7 tank/a@s1 >"$T/cgz7.stream"
is "$(ferry dump "$T/cgz7.stream" | grep 'tried =')" "	tried = gzip-7" \
	"send -c --compress=gzip-7 says the same"

# ---- a lying sender ---------------------------------------------------------------
# a plain stream (logical blocks, the text compressible) that claims gzip-7
ferry send tank/a@s1 | "$FERRY_TOOLS/sethint" 0 2 7 >"$T/liar.stream"
run ferry recv -v liar/a <"$T/liar.stream"
is "$rc:$(blocks 'logical compressed')" "0:0" "a false claim is believed..."
is "$(blocks 'raw as tried')" "$(ferry dump -v "$T/liar.stream" | grep -c '^WRITE ')" \
	"...every block stored raw, the compressible ones too: space is all it costs"
run "$FERRY_TOOLS/recvclass" liar/bad <"$B/hint-write-hash.stream"
like "$rc:$(cat "$T/out")" '^1:corrupt	.*(hash|does not match)' \
	"a raw block whose content is not its hash is refused under the claim too"
is "$(ferry list -H -o name liar/bad 2>/dev/null)" "" "and nothing of it was committed"
ferry gc liar >/dev/null
rm -rf "$TS/liar"
ferry restore liar/a@s1 "$TS/liar"
diff -r "$S" "$TS/liar" >"$T/cmp" 2>&1 && ok "what the liar sent restores identical" ||
	{ not_ok "what the liar sent restores identical"; diag "$(head -3 "$T/cmp")"; }

# ---- what was received over HTTP ---------------------------------------------------------
after_check bk/h ctl/h "auto over HTTP"

done_testing
