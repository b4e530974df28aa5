#!/bin/sh
# ferry sync to an https:// destination, through a real ferry serve with
# TLS and an append token (ferry(8) REPLICATION, docs/ferry-http.7): a
# full then -I incrementals with --compress=auto (0 recompressed blocks
# on the server), up to date, -n, -r with a new child, the hold moved on
# the source, the retention properties not received (exclude=), a cut
# upload's partial receive resumed, a wrong token, a scope and -o refused
# with one line. Back-to-back uploads and an abort followed at once by an
# upload never find the dataset busy (the server frees it before it
# answers). Ends with after_check against a pool synced locally.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
mkcert
CACERT=$T/cert.pem
S=$T/src
mkdir -p "$S/sub"
"$PRNG" text 1 400000 >"$S/a"
"$PRNG" bin 2 200000 >"$S/b"
ferry pool create tank "$T/tank"
ferry create -o source="$S" tank/h
ferry set ferry:keep-daily=7 user:note=kept tank/h
ferry snapshot tank/h@s1
"$PRNG" text 3 100000 >>"$S/a"
ferry snapshot tank/h@s2
echo more >"$S/c"
ferry snapshot tank/h@s3
ferry pool create -o compression=gzip-7 bk "$T/bk"
ferry create bk/c
token a bk/c append
token w bk/c write
token other bk/x append
serve_start --tls-cert "$T/cert.pem" --tls-key "$T/key.pem" bk
D=$URL/bk/c/h
sync_http() { run "$FERRY" sync --cacert "$CACERT" --token-file "$T/tok.a" "$@"; }

sync_http --compress=auto tank/h "$D"
is "$rc" 0 "sync to https:// (full, then -I)"
like "$(cat "$T/out")" "^tank/h -> $D: sent 3 snapshots in full to @s3, .* 0 recompressed, " \
	"one line: the whole history, 0 blocks recompressed by the server"
is "$(ferry list -H -r -t snapshot -o name bk/c | tr '\n' ' ')" "bk/c/h@s1 bk/c/h@s2 bk/c/h@s3 " \
	"the destination has every snapshot"
is "$(ferry holds -H tank/h@s3 | cut -f2)" "ferry-sync:$D" "the source holds its base for that destination"
is "$(ferry get -H -o value,source user:note bk/c/h | tr '\t' ' ')" "kept received" \
	"properties travel (received)"
is "$(ferry get -H -o value ferry:keep-daily bk/c/h)" - "but not the retention properties"
sync_http tank/h "$D"
is "$rc:$(cat "$T/out")" "0:tank/h -> $D: up to date at @s3" "a second run is up to date"

"$PRNG" bin 4 300000 >"$S/d"
ferry snapshot tank/h@s4
sync_http -n tank/h "$D"
like "$rc:$(cat "$T/out")" "^0:tank/h -> $D: would send 1 snapshot incremental from @s3 to @s4" "-n says what it would send"
is "$(ferry list -H -r -t snapshot -o name bk/c/h | wc -l)" 3 "and sends nothing"

# a cut upload leaves a partial receive, which the next sync resumes
ferry send -p -i @s3 tank/h@s4 >"$T/s4.s"
head -c 200000 "$T/s4.s" >"$T/s4.cut"
req "$(tok a)" PUT /v1/receive/bk/c/h --data-binary @"$T/s4.cut"
req "$(tok a)" GET /v1/receive/bk/c/h
like "$(json_get receive_resume_token)" '^1-' "(a cut upload kept a partial receive)"
run "$FERRY" sync --json --cacert "$CACERT" --token-file "$T/tok.a" tank/h "$D"
is "$rc:$(tr -d ' \n' <"$T/out" | grep -o '"resumed":[a-z]*')" '0:"resumed":true' \
	"the sync resumes it from the server's token"
is "$(ferry get -H -o value receive_resume_token bk/c/h):$(ferry list -H -t snapshot -o name bk/c/h | tail -1)" \
	"-:bk/c/h@s4" "and completes it"

# -r: a new child
ferry create -o source="$S/sub" tank/h/sub
echo x >"$S/sub/x"
ferry snapshot -r tank/h@s5
sync_http -r tank/h "$D"
is "$rc" 0 "sync -r"
is "$(ferry list -H -r -t snapshot -o name bk/c/h | tr '\n' ' ')" \
	"bk/c/h@s1 bk/c/h@s2 bk/c/h@s3 bk/c/h@s4 bk/c/h@s5 bk/c/h/sub@s5 " "the new child is created"

# refusals: one line each, nothing received
refused 1 "403: 'bk/c/h' is outside the token's scope" "another client's token: 403, one line" \
	"$FERRY" sync --cacert "$CACERT" --token-file "$T/tok.other" tank/h "$D"
echo "ferry_$(printf '%064d' 0)" >"$T/tok.bad"
refused 1 "401" "an unknown token" "$FERRY" sync --cacert "$CACERT" --token-file "$T/tok.bad" tank/h "$D"
refused 1 "403" "out of scope" "$FERRY" sync --cacert "$CACERT" --token-file "$T/tok.a" tank/h "$URL/bk/x/h"
refused 1 "certificate|SSL|TLS" "TLS is verified" "$FERRY" sync --token-file "$T/tok.a" tank/h "$D"
refused 1 "-o is not for an http" "-o is refused" \
	"$FERRY" sync --cacert "$CACERT" --token-file "$T/tok.a" -o user:x=1 tank/h "$D"

# back to back: the server frees a dataset before it answers
ferry create -o source="$S" tank/r
for i in 1 2 3 4 5 6 7 8; do
	echo "$i" >"$S/r$i"
	ferry snapshot "tank/r@r$i"
	if [ "$i" = 1 ]; then ferry send tank/r@r1 >"$T/r1.s"
	else ferry send -i "@r$((i - 1))" "tank/r@r$i" >"$T/r$i.s"; fi
done
codes=
for i in 1 2 3 4 5 6 7 8; do
	req "$(tok a)" PUT /v1/receive/bk/c/raw --data-binary @"$T/r$i.s"
	codes="$codes$status "
done
is "$codes" "200 200 200 200 200 200 200 200 " "8 uploads back to back: never 409"
codes=
ferry send tank/r@r8 >"$T/r8-full.s"
head -c 300000 "$T/r8-full.s" >"$T/r8.cut"
req "$(tok a)" PUT /v1/receive/bk/c/raw2 --data-binary @"$T/r8.cut"
for i in 1 2 3 4 5; do
	req "$(tok w)" DELETE /v1/receive/bk/c/raw2
	codes="$codes$status:"
	req "$(tok a)" PUT /v1/receive/bk/c/raw2 --data-binary @"$T/r8.cut"
	codes="$codes$status "
done
is "$codes" "200:400 200:400 200:400 200:400 200:400 " "an abort then at once an upload: never 409"
req "$(tok w)" DELETE /v1/receive/bk/c/raw2
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

# the control: the same syncs into a local pool
ferry pool create -o compression=gzip-7 ctl "$T/ctl"
ferry create ctl/c
ferry sync -r --compress=auto tank/h ctl/c/h >/dev/null
for i in 1 2 3 4 5 6 7 8; do ferry recv ctl/c/raw <"$T/r$i.s"; done
after_check bk ctl "sync over https"
done_testing
