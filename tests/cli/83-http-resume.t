#!/bin/sh
# Dropped connections, resumed by the client on its own (docs/ferry-http.7,
# RESUMING). A small TCP proxy (cut_proxy.py) cuts the first 20 uploads of
# `ferry send --to` after a random number of bytes each, and the first 5
# downloads of `ferry recv --from`. Each cut leaves a partial receive (the
# server's, or our own pool's for a download); the client asks for its
# token and sends (or asks for) only what comes after it: a stream that
# does not resume exactly at the partial receive's position would be
# refused (409), so none of these resumes sends twice anything at or before
# the last committed position. Every transfer completes, with identical
# data, and all uploads together carry less than the stream plus what was
# in flight at each cut. Then: an interrupted run of `recv --from` is
# taken up by running it again. Ends with after_check against controls fed
# through pipes.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" bin 11 6000000 >"$S/blob"
"$PRNG" text 12 2000000 >"$S/text"
for i in 1 2 3 4 5 6 7 8; do "$PRNG" text $((20 + i)) 40000 >"$S/small$i"; done
upload_fixture
SIZE=$(ferry send --compress=lz4 tank/fs@a | wc -c)
SEED=${HTTP_CUT_SEED:-$(date +%s)}
diag "cut offsets from seed $SEED (HTTP_CUT_SEED=$SEED reproduces them)"
# 20 cuts, each after 2 KiB..400 KiB of that connection: 20 of them are
# less than the stream, so every one cuts
UP=$(awk -v s="$SEED" 'BEGIN { srand(s); for (i = 0; i < 20; i++) printf "%s%d", i ? "," : "", 2048 + int(rand() * 400000) }')
DOWN=$(awk -v s="$SEED" 'BEGIN { srand(s + 1); for (i = 0; i < 5; i++) printf "%s%d", i ? "," : "", 2048 + int(rand() * 1500000) }')
proxy_start cut_proxy.py "$T/proxy.log" "$PORT" "$UP" "$DOWN"

run "$FERRY" send -v tank/fs@a --to "$PURL/bk/fs" --retries 20
is "$rc" 0 "the upload completes through 20 cuts"
[ "$rc" = 0 ] || diag "$(tail -5 "$T/err")"
is "$(grep -c '^put [0-9]* [0-9]* cut$' "$T/proxy.log")" 20 "the proxy cut 20 uploads"
# the last one is logged when its connection ends
i=0
while ! grep -q '^put [0-9]* [0-9]* whole$' "$T/proxy.log" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
is "$(grep -c '^put [0-9]* [0-9]* whole$' "$T/proxy.log")" 1 "and let the last one through"
nres=$(grep -c '^resuming tank/fs@a after record' "$T/err")
like "$nres" '^(1[0-9]|20)$' "the client resumed at least 10 times from the server's token ($nres)"
# the positions it resumed at never go back
like "$(sed -n 's/^resuming tank\/fs@a after record \([0-9]*\)$/\1/p' "$T/err" |
	awk 'NR > 1 && $1 < p { bad = 1 } { p = $1 } END { print bad ? "back" : "forward" }')" \
	'^forward$' "every resume starts at or after the one before"
# Starting again after each cut would carry the whole stream on the last
# connection and every cut connection's bytes on top. Resuming carries the
# stream once, plus at each cut the part of a record (16K) and what sat in
# buffers: at most half of what the cut connections carried.
UPB=$(awk '$1 == "put" { s += $2 } END { print s }' "$T/proxy.log")
CUTB=$(awk '$1 == "put" && $4 == "cut" { s += $2 } END { print s }' "$T/proxy.log")
LASTB=$(awk '$1 == "put" && $4 == "whole" { print $2 }' "$T/proxy.log")
like "$(( UPB < SIZE + CUTB / 2 ))" '^1$' \
	"the uploads carried $UPB bytes for a $SIZE-byte stream cut after $CUTB: nothing sent twice but what was in flight"
like "$(( LASTB < SIZE - CUTB / 2 ))" '^1$' "the last upload carried only the rest ($LASTB bytes)"
rm -rf "$TS/a" "$TS/b"
ferry restore tank/fs@a "$TS/a"
ferry restore bk/fs@a "$TS/b"
run "$FERRY_TOOLS/treecmp" "$TS/a" "$TS/b"
is "$rc" 0 "the received snapshot is identical to the source"
is "$(ferry get -H -o value receive_resume_token bk/fs)" - "and no partial receive is left"

ferry pool create new "$T/new"
run "$FERRY" recv -v --from "$PURL/bk/fs@a" new/fs --retries 20
is "$rc" 0 "the download completes through 5 cuts"
[ "$rc" = 0 ] || diag "$(tail -5 "$T/err")"
is "$(grep -c '^send [0-9]* [0-9]* cut$' "$T/proxy.log")" 5 "the proxy cut 5 downloads"
like "$(grep -c '^resuming bk/fs@a after record' "$T/err")" '^[1-5]$' \
	"the client resumed from its own partial receive"
rm -rf "$TS/b"
ferry restore new/fs@a "$TS/b"
run "$FERRY_TOOLS/treecmp" "$TS/a" "$TS/b"
is "$rc" 0 "the downloaded snapshot is identical to the source"

# a run that gives up keeps the partial receive; the same command again
# takes it up
ferry pool create new2 "$T/new2"
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
: >"$T/proxy.log"
proxy_start cut_proxy.py "$T/proxy.log" "$PORT" "" "300000,100,100"
refused 1 "gave up after [0-9]+ attempts without progress; the partial receive is kept" \
	"a download that gives up says the partial receive is kept" \
	"$FERRY" recv --from "$PURL/bk/fs@a" new2/fs --retries 1
like "$(ferry get -H -o value receive_resume_token new2/fs)" '^1-' "its token is there"
run "$FERRY" recv -v --from "$PURL/bk/fs@a" new2/fs
is "$rc" 0 "the same command again completes it"
like "$(head -1 "$T/err")" '^resuming bk/fs@a after record [1-9]' "by resuming, not from the start"
serve_stop

ferry pool create -o compression=lz4 ctl "$T/ctl"
ferry send tank/fs@a | ferry recv ctl/fs
after_check bk ctl "an upload through 20 cuts"
ferry pool create ctl2 "$T/ctl2"
ferry send -c bk/fs@a | ferry recv ctl2/fs
after_check new ctl2 "a download through 5 cuts"
after_check new2 ctl2 "a download given up and taken up again"
done_testing
