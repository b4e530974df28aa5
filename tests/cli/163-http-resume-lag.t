#!/bin/sh
# An upload cut before the server took it up (docs/ferry-http.7,
# RESUMING). The client asks where the server stands right after a cut;
# when the server has not yet begun the cut connection's receive, it is
# told "nothing received", sends again from the start, and the server,
# which meanwhile kept the partial state of the cut connection, answers
# 409: the stream does not resume it. That 409 is taken as another cut:
# the client asks again, resumes from the server's token, and completes.
# tests/cli/lag_proxy.py makes this order happen every time (it was seen
# under load in tests/cli/83, where the client gave up). Ends with
# after_check against a control fed through a pipe.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" bin 31 3000000 >"$S/blob"
"$PRNG" text 32 1000000 >"$S/text"
upload_fixture
# the first upload's first 600,000 bytes reach the server once the client,
# its connection reset, was told where the server stands; the client's
# next upload waits until the server says it took them up (at most 30 s;
# a fixed wait of 1 s once failed tests 4-5 on a loaded 2-core VM: the
# upload from the start got there first and met no 409)
proxy_start lag_proxy.py "$T/proxy.log" "$PORT" 600000 30

run "$FERRY" send -v tank/fs@a --to "$PURL/bk/fs" --retries 3
is "$rc" 0 "the upload completes"
[ "$rc" = 0 ] || diag "$(tail -5 "$T/err")"
like "$(tr '\n' '|' <"$T/proxy.log")" \
	'^put held 600000, client reset\|(put waits\|)?the client was told where the server stands\|(put waits\|)?put forwarded late, server reset\|(put waits\|)?the server took up the cut receive\|.*put forwarded\|' \
	"the proxy held the first upload until the client had asked, and let the next upload wait until the server took it up"
like "$(cat "$T/err")" "connection lost .*; starting again" \
	"the client, told nothing was received yet, started again"
like "$(cat "$T/err")" "the server's partial receive moved \(the server answered 409: .*(holds a partial receive|a receive, abort or destroy runs on it).*\); resuming" \
	"the 409 that met it (the partial receive, or the cut receive still running) was taken as a cut"
like "$(cat "$T/err")" "resuming tank/fs@a after record [1-9][0-9]*" \
	"the client then resumed from the server's partial receive"
rm -rf "$TS/a" "$TS/b"
ferry restore tank/fs@a "$TS/a"
ferry restore bk/fs@a "$TS/b"
run "$FERRY_TOOLS/treecmp" "$TS/a" "$TS/b"
is "$rc" 0 "the received snapshot is identical to the source"
is "$(ferry get -H -o value receive_resume_token bk/fs)" - "and no partial receive is left"

# a 409 without a cut before it is still an answer: an upload into a
# dataset that holds a partial receive of another stream fails at once
ferry snapshot tank/fs@b
run sh -c "'$FERRY' send -c tank/fs@a | head -c 400000 | '$FERRY' recv -s bk/other"
like "$(ferry get -H -o value receive_resume_token bk/other)" '^1-' "a partial receive of @a in bk/other"
refused 1 "cannot send 'tank/fs@b' to 'bk/other': the server answered 409: .*holds a partial receive" \
	"an upload that meets a 409 before any cut fails at once" \
	"$FERRY" send tank/fs@b --to "$URL/bk/other" --retries 3
serve_stop

ferry pool create -o compression=lz4 ctl "$T/ctl"
ferry send tank/fs@a | ferry recv ctl/fs
ferry send -c tank/fs@a | head -c 400000 | ferry recv -s ctl/other 2>/dev/null
after_check -B bk/fs ctl/fs "an upload whose cut the server took up late"
done_testing
