#!/bin/sh
# quota and refquota over HTTP (docs/ferry-http.7, 507): a receive that
# would put the client's dataset over its quota gets 507 with a one-line
# JSON body, from ferry send --to (exit 1, one line) and from a raw PUT,
# and commits nothing; a cut upload's partial receive whose completion is
# over the quota stays as it was (the same token in GET /v1/receive), and
# once the quota is raised the same ferry send --to completes it; another
# client's dataset, with room, is not held back. Ends with after_check
# against a pool that got the same snapshots without quotas.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" bin 1 300000 >"$S/a"
ferry pool create -o compression=off tank "$T/tank"
ferry create -o source="$S" tank/h
ferry snapshot tank/h@one
"$PRNG" bin 2 300000 >"$S/b"
ferry snapshot tank/h@two
ferry send tank/h@one >"$T/one.s"
ferry send -i @one tank/h@two >"$T/two.s"
ferry pool create -o compression=off bk "$T/bk"
ferry create -o quota=400K bk/c1
ferry create -o quota=1M bk/c2
token c1 bk/c1 append
token c2 bk/c2 append
serve_start bk
state() { ferry list -H -p -r -t all -o name,used,referenced,receive_resume_token bk; }

run "$FERRY" send tank/h@one --to "$URL/bk/c1/h" --token-file "$T/tok.c1"
is "$rc" 0 "a full send within the quota"
before=$(state)
refused 1 "^ferry: .*507.*quota exceeded: 'bk/c1' would use 586K, over its quota of 400K" \
	"an incremental over the quota: 507, exit 1, one line" \
	"$FERRY" send -i @one tank/h@two --to "$URL/bk/c1/h" --token-file "$T/tok.c1"
is "$(state)" "$before" "nothing is committed"
req "$(tok c1)" PUT /v1/receive/bk/c1/h --data-binary @"$T/two.s"
is "$status" 507 "a raw PUT of it is 507"
if json_error_ok 507; then ok "with a one-line JSON body"; else not_ok "with a one-line JSON body"; diag "$(cat "$T/body")"; fi
like "$(json_get error)" "quota exceeded: 'bk/c1' would use 586K, over its quota of 400K" "naming the limit"
is "$(state)" "$before" "still nothing committed"

# a cut upload: the server keeps its partial receive, whose completion
# is over the quota
head -c 200000 "$T/two.s" >"$T/two.cut"
req "$(tok c1)" PUT /v1/receive/bk/c1/h --data-binary @"$T/two.cut"
is "$status" 400 "a truncated upload is refused"
like "$(json_get error)" "records received are kept: resume with the same 'ferry send --to', which resumes by itself \\(the token: GET /v1/receive/bk/c1/h\\)\$" \
	"its error says how an HTTP client resumes (not the pipe's send -t)"
req "$(tok c1)" GET /v1/receive/bk/c1/h
tok1=$(json_get receive_resume_token)
like "$tok1" '^1-' "and kept as a partial receive"
before=$(state)
refused 1 "507.*quota exceeded" "its automatic resumption is refused with 507 too" \
	"$FERRY" send -i @one tank/h@two --to "$URL/bk/c1/h" --token-file "$T/tok.c1"
req "$(tok c1)" GET /v1/receive/bk/c1/h
is "$(json_get receive_resume_token):$(json_get receiving)" "$tok1:false" \
	"the partial receive stays as it was"
is "$(state)" "$before" "and nothing else changed"

# the other client has room
run "$FERRY" send tank/h@one --to "$URL/bk/c2/h" --token-file "$T/tok.c2"
is "$rc" 0 "another client's dataset with room takes a full send"
run "$FERRY" send -i @one tank/h@two --to "$URL/bk/c2/h" --token-file "$T/tok.c2"
is "$rc" 0 "and the incremental"

# the quota raised on the server: the same command completes
ferry set quota=1M bk/c1
run "$FERRY" send -i @one tank/h@two --to "$URL/bk/c1/h" --token-file "$T/tok.c1"
is "$rc" 0 "once the quota is raised, the same send completes"
is "$(ferry get -H -o value receive_resume_token bk/c1/h)" - "from the partial receive"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

ferry pool create -o compression=off ctl "$T/ctl"
ferry create ctl/c1
ferry create ctl/c2
for d in c1 c2; do
	ferry recv ctl/$d/h <"$T/one.s"
	ferry recv ctl/$d/h <"$T/two.s"
done
after_check bk ctl "receives over HTTP refused over a quota"
done_testing
