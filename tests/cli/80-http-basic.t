#!/bin/sh
# ferry token and ferry serve, and each endpoint of docs/ferry-http.7 on
# its own: token create shows a token once and stores its hash (0600),
# list and revoke; serve's usage errors; GET /v1/pools; GET
# /v1/datasets answers what `ferry get all` says, and `ferry list` and
# `ferry get` of a URL print what they print locally; GET /v1/receive of
# a dataset that does not exist yet gives the compression it would
# inherit; 404 and 405 with Allow; send's errors before the first byte; a
# corrupt upload is 400 with nothing committed, its last_error readable;
# a receive that fills the disk is 507 (on a small tmpfs, when mounting is
# allowed). Write paths end with gc and restores compared with the source.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
skip() { _n=$((_n + 1)); echo "ok $_n # skip $*"; }
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" text 1 400000 >"$S/a"
"$PRNG" bin 2 300000 >"$S/b"
ferry pool create tank "$T/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@one
echo more >>"$S/a"
ferry snapshot tank/fs@two
ferry bookmark tank/fs@one tank/fs#m1
ferry pool create -o compression=gzip-3 bk "$T/bk"
ferry create bk/h
ferry set user:note=hello bk/h
ferry send tank/fs@one | ferry recv bk/h/fs

# ---- tokens ----
run "$FERRY" token create --tokens "$TOKENS" --scope bk/h --perm append --name laptop
is "$rc" 0 "token create"
like "$(cat "$T/out")" '^ferry_[0-9a-f]{64}$' "prints the token, once, on stdout"
cp "$T/out" "$T/tok.laptop"
like "$(cat "$T/err")" 'shown only now' "and says it is not shown again"
is "$(stat -c %a "$TOKENS")" 600 "the tokens file is made 0600"
is "$(grep -c "$(cut -c7- "$T/tok.laptop")" "$TOKENS")" 0 "it holds no token text"
refused 1 "exists already" "a second token of the same name is refused" \
	"$FERRY" token create --tokens "$TOKENS" --scope bk --perm read --name laptop
refused 2 "unknown permission" "an unknown permission is a usage error" \
	"$FERRY" token create --tokens "$TOKENS" --scope bk --perm admin
refused 1 "bad scope" "a scope must be a dataset name" \
	"$FERRY" token create --tokens "$TOKENS" --scope 'bk/h@snap' --perm read
token w bk write
token r bk/h read
run "$FERRY" token list --tokens "$TOKENS"
like "$(head -1 "$T/out")" '^ID +NAME +PERM +SCOPE +CREATED$' "token list has a header"
is "$(awk 'NR > 1 { print $2, $3, $4 }' "$T/out" | tr '\n' ';')" "laptop append bk/h;w write bk;r read bk/h;" \
	"and a line per token"
token gone bk read
id=$(ferry token list --tokens "$TOKENS" -H | awk -F'\t' '$2 == "gone" { print $1 }')
run "$FERRY" token revoke --tokens "$TOKENS" "$id"
is "$rc" 0 "token revoke by id"
is "$(ferry token list --tokens "$TOKENS" -H | grep -c gone)" 0 "the token is gone"
refused 1 "no token with id or name" "revoking it again is refused" \
	"$FERRY" token revoke --tokens "$TOKENS" gone

# ---- serve's usage ----
refused 2 "usage: ferry serve" "serve needs --tokens and a pool" "$FERRY" serve bk
refused 1 "cannot serve pool 'nosuch'" "serve refuses a pool that is not registered" \
	timeout 10 "$FERRY" serve --tokens "$TOKENS" nosuch
refused 1 "listen address" "serve refuses a bad --listen" \
	timeout 10 "$FERRY" serve --tokens "$TOKENS" --listen nowhere bk
refused 2 "go together" "--tls-cert needs --tls-key" "$FERRY" serve --tokens "$TOKENS" --tls-cert x bk
echo junk >"$T/badcert"
refused 1 "cannot listen on 127.0.0.1:0: .*(certificate|key)" "an unreadable certificate stops serve" \
	timeout 10 "$FERRY" serve --tokens "$TOKENS" --listen 127.0.0.1:0 --tls-cert "$T/badcert" --tls-key "$T/badcert" bk
serve_start bk
like "$PORT" '^[0-9]+$' "the server starts on a free port"
refused 1 "cannot listen on 127.0.0.1:$PORT: .*in use" "a second server on that port is refused" \
	timeout 10 "$FERRY" serve --tokens "$TOKENS" --listen "127.0.0.1:$PORT" bk

# ---- GET /v1/pools ----
req "$(tok r)" GET /v1/pools
is "$status" 200 "GET /v1/pools"
is "$(json_get protocol):$(json_get scope):$(json_get perm):$(json_get pools 0 name)" "1:bk/h:read:bk" \
	"says the protocol, the token's scope and permission, and the pool"

# ---- GET /v1/datasets ----
req "$(tok r)" GET "/v1/datasets/bk/h?depth=-1"
is "$status" 200 "GET /v1/datasets"
is "$(json_get objects 0 name) $(json_get objects 1 name) $(json_get objects 2 name)" \
	"bk/h bk/h/fs bk/h/fs@one" "a dataset, its children, their snapshots, in list order"
is "$(json_get objects 1 compression)" gzip-3 "each dataset's effective compression"
is "$(json_get objects 1 receive_resume_token)" null "and its resume token"
is "$(json_get objects 0 properties user:note value)" hello "user properties"
is "$(json_get objects 1 properties compression source)" "inherited from bk" "sources as get prints them"
req "$(tok r)" GET "/v1/datasets/bk/h?types=snapshot&depth=1"
is "$(json_get objects 0 name)" bk/h/fs@one "types=snapshot lists only snapshots"
req "$(tok r)" GET "/v1/datasets/bk/h/fs@one"
is "$(json_get objects 0 type)" snapshot "a snapshot by name"
is "$(ferry list -H -r -t all -o name,used,referenced,compressratio,compression bk/h)" \
	"$(ferry list -H -r -t all -o name,used,referenced,compressratio,compression "$URL/bk/h" --token-file "$T/tok.r")" \
	"ferry list of a URL prints what it prints locally"
# (available moves with what else the disk holds: left out)
is "$(ferry list -r bk/h | awk '{ $3 = "-"; print }')" \
	"$(ferry list -r "$URL/bk/h" --token-file "$T/tok.r" | awk '{ $3 = "-"; print }')" \
	"also with its default columns and headers"
is "$(ferry get -r all bk/h | grep -v ' available ')" \
	"$(ferry get -r all "$URL/bk/h" --token-file "$T/tok.r" | grep -v ' available ')" \
	"ferry get all of a URL prints what it prints locally"
is "$(ferry get -H -p -o value used bk/h/fs)" \
	"$(FERRY_TOKEN="$(tok r)" ferry get -H -p -o value used "$URL/bk/h/fs")" "get -p of a URL with FERRY_TOKEN"
refused 1 "401" "list of a URL without a token is refused" "$FERRY" list "$URL/bk/h"

# ---- GET /v1/receive ----
req "$(tok r)" GET /v1/receive/bk/h/new
is "$status:$(json_get exists):$(json_get compression)" "200:false:gzip-3" \
	"GET /v1/receive of a dataset to come: the compression it would inherit"
req "$(tok r)" GET /v1/receive/bk/h/fs
is "$(json_get exists):$(json_get snapshots 0 name):$(json_get receiving)" "true:one:false" \
	"of an existing one: its snapshots, and no receive running"
req "$(tok r)" GET /v1/receive/bk/h/no/such
is "$status" 404 "404 when the parent does not exist"

# ---- paths and methods ----
req "$(tok w)" GET /v1/nosuch
is "$status" 404 "an unknown endpoint is 404"
status=$(curl -sS -o "$T/body" -D "$T/hdr" -w '%{http_code}' -X POST -H "Authorization: Bearer $(tok w)" \
	"$URL/v1/receive/bk/h/x")
is "$status" 405 "a method an endpoint does not take is 405"
like "$(tr -d '\r' <"$T/hdr" | grep -i '^allow:')" '^[Aa]llow: GET, PUT, DELETE$' "with Allow"
req "$(tok w)" GET "/v1/datasets/bk/h/%2e%2e/x"
is "$status" 400 "a '..' component, even as %2e%2e, is 400"
req "$(tok w)" GET "/v1/datasets/bk?depth=1&depth=2"
is "$status" 400 "a repeated parameter is 400"
req "$(tok w)" GET "/v1/datasets/bk?sort=name"
is "$status:$(json_get error)" "400:unknown parameter 'sort'" "an unknown parameter is 400, named"
req "$(tok w)" GET /v1/datasets/bk -d hello
is "$status" 400 "a body on a GET is 400"
ferry pool create other "$T/other"
token o other read
serve_hup
req "$(tok o)" GET "/v1/datasets/other"
is "$status:$(json_get error)" "404:pool 'other' is not served here" "a pool that is not served is 404"

# ---- GET /v1/send ----
req "$(tok r)" GET "/v1/send/bk/h/fs@nosuch"
is "$status" 404 "sending a missing snapshot: 404 before the first byte"
req "$(tok r)" GET "/v1/send/bk/h/fs@one?token=1-abc"
is "$status" 400 "a bad resume token: 400"
req "$(tok r)" GET "/v1/send/bk/h/fs@one?compress=zstd"
is "$status" 400 "an unknown codec: 400"
req "$(tok r)" GET "/v1/send/bk/h/fs@one?compressed=1"
is "$status" 200 "send -c"
run "$FERRY" dump -v "$T/body"
is "$rc" 0 "is a whole stream"
like "$(grep -c '^WRITE .*codec=gzip-3$' "$T/out")" '^[1-9]' "with the blocks as stored"

# ---- PUT /v1/receive: a corrupt stream ----
ferry send -i @one tank/fs@two >"$T/incr"
ferry send tank/fs@two >"$T/full"
cp "$T/full" "$T/bad"
printf '\377' | dd of="$T/bad" bs=1 seek=$(($(wc -c <"$T/full") * 2 / 3)) conv=notrunc 2>/dev/null
before=$(pool_state bk)
req "$(tok w)" PUT /v1/receive/bk/h/c -T "$T/bad"
is "$status" 400 "a corrupt upload is 400"
like "$(json_get error)" "damaged|corrupt|does not match" "saying it is damaged"
is "$(ferry list -H -t snapshot -o name bk/h/c 2>/dev/null)" "" "nothing of it is committed"
req "$(tok w)" GET /v1/receive/bk/h/c
is "$(json_get last_error status)" 400 "its error is readable as last_error"
like "$(json_get receive_resume_token)" '^1-' "and what came whole is kept as a partial receive"
run "$FERRY" send -v tank/fs@two --to "$URL/bk/h/c" --token-file "$T/tok.w"
is "$rc" 0 "a good send then resumes it"
like "$(cat "$T/err")" "resuming tank/fs@two after record [1-9]" "from the partial receive"
req "$(tok w)" GET /v1/receive/bk/h/c
is "$(json_get last_error)" null "and last_error is cleared"
# an early error with a larger body: answered after the body
head -c 300 "$T/full" >"$T/early"
printf 'x' | dd of="$T/early" bs=1 seek=40 conv=notrunc 2>/dev/null
head -c 8000000 /dev/zero >>"$T/early"
req "$(tok w)" PUT /v1/receive/bk/h/e -T "$T/early"
is "$status" 400 "an error early in a larger body is answered at its end"
is "$(ferry list -H -o name bk/h/e 2>/dev/null)" "" "nothing of it is kept"
# an incremental into the right base: 200 with the report
req "$(tok w)" PUT /v1/receive/bk/h/fs -T "$T/incr"
is "$status" 200 "an incremental upload with curl"
is "$(json_get received 0 snapshot)" bk/h/fs@two "the report names the snapshot"
like "$(json_get received 0 blocks recompressed)" '^[0-9]+$' "and counts its blocks"
req "$(tok w)" PUT /v1/receive/bk/h/fs -T "$T/incr"
is "$status" 409 "the same snapshot again is 409"
# destroy and abort
req "$(tok w)" DELETE /v1/snapshots/bk/h/fs@nosuch
is "$status" 404 "destroying a missing snapshot is 404"
req "$(tok w)" DELETE /v1/receive/bk/h/fs
is "$status" 404 "aborting where there is no partial receive is 404"
req "$(tok w)" DELETE /v1/snapshots/bk/h/fs@two
is "$status:$(json_get destroyed)" "200:bk/h/fs@two" "destroying a snapshot"
is "$(ferry list -H -t snapshot -o name bk/h/fs | tr '\n' ' ')" "bk/h/fs@one " "it is gone"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

# ---- 507: a full disk (a small tmpfs) ----
mkdir -p "$T/mnt"
if mount -t tmpfs -o size=6m,mode=0700 tmpfs "$T/mnt" 2>/dev/null; then
	ferry pool create small "$T/mnt/small"
	mkdir -p "$T/big"
	"$PRNG" bin 9 12000000 >"$T/big/blob"
	ferry create -o source="$T/big" tank/big
	ferry snapshot tank/big@a
	token sw small write
	serve_start small
	before=$(pool_state small)
	run "$FERRY" send tank/big@a --to "$URL/small/big" --token-file "$T/tok.sw"
	is "$rc" 1 "a send into a full disk fails"
	like "$(cat "$T/err")" "507" "with 507"
	serve_stop
	is "$(ferry list -H -r -t snapshot -o name small)" "" "nothing is committed"
	run "$FERRY" gc small
	is "$rc" 0 "gc works on the full pool"
	umount "$T/mnt"
else
	skip "507: mount is not allowed here"
	skip "507"
	skip "507"
	skip "507"
fi

ferry gc bk >/dev/null
bad=0
for s in $(ferry list -H -r -t snapshot -o name bk); do
	rm -rf "$TS/r" "$TS/w"
	ferry restore "$s" "$TS/r"
	ferry restore "tank/fs@${s#*@}" "$TS/w"
	"$FERRY_TOOLS/treecmp" "$TS/w" "$TS/r" >/dev/null || { bad=1; diag "$s differs"; }
done
is "$bad" 0 "after gc every snapshot of bk restores identical to its source"
done_testing
