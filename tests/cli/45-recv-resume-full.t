#!/bin/sh
# Resumable receive of a full stream: 50 random truncations received with
# recv -s keep their partial state; `ferry get receive_resume_token` and
# `ferry send -t` complete each one, with data identical to the source.
# Also recv -A, and a fresh stream refused while a partial state exists.
# After gc, the pool equals one whose datasets got the stream in one go.
. "$(dirname "$0")/corrupt.sh"
corrupt_setup
ferry send -c tank/fs@a >"$T/stream"
corrupt_resume "$T/stream" "full stream" 45 tank/fs@a
# -A discards the partial state (and the dataset made for it)
head -c 150000 "$T/stream" >"$T/cut"
ferry recv -s bk/aborted <"$T/cut" 2>/dev/null
like "$(ferry get -H -o value receive_resume_token bk/aborted)" "^1-[0-9a-f]+$" "a token after an interrupted recv -s"
refused 1 "holds a partial receive" "a fresh stream is refused while a partial state exists" \
	"$FERRY" recv bk/aborted <"$T/stream"
run "$FERRY" recv -A bk/aborted
is "$rc" 0 "recv -A discards the partial state"
is "$(ferry list -H -o name bk/aborted 2>/dev/null)" "" "recv -A removed the dataset made for it"
refused 1 "no partial receive" "recv -A with nothing to abort is refused" "$FERRY" recv -A bk/aborted
run "$FERRY" recv bk/aborted <"$T/stream"
is "$rc" 0 "the whole stream is then received afresh"
# without -s nothing is kept
ferry recv bk/nos <"$T/cut" 2>/dev/null
is "$(ferry list -H -o name bk/nos 2>/dev/null)" "" "without -s an interrupted receive leaves nothing"
ferry recv ctl/aborted <"$T/stream"
after_check -e "/s45-*@a=$T/want" bk ctl "50 resumed receives, recv -A"
done_testing
