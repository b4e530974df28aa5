#!/bin/sh
# ferry send -R SNAP --to URL (ferry(8) send --to, docs/ferry-http.7): a
# dataset tree sent to a ferry serve leaves what `send -R | recv` leaves
# (every dataset below that has the snapshot, with every snapshot up to it
# and its properties, the retention ones too; a child without it left
# out), one stream per dataset and step (ferry sync -r's walk), each PUT
# authorised on its own: no token, a wrong one, a revoked one (after
# SIGHUP), a read token and another client's are refused with one line
# and change nothing. With an append token: a later snapshot sends only
# what the server lacks, a new child goes in full, a run again is up to
# date, a partial receive the server kept is resumed, cut uploads are
# resumed on their own, and a dataset that went on without the source is
# refused, never rolled back. Ends with after_check against a pool that
# got `send -R | recv`.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
unset FERRY_TOKEN
DSS="h h/a h/a/x h/b"
mkdir -p "$T/s/h" "$T/s/a" "$T/s/x" "$T/s/b" "$T/s/c" "$T/s/d"
"$PRNG" text 1 300000 >"$T/s/h/t"
"$PRNG" bin 2 200000 >"$T/s/a/b"
"$PRNG" text 3 100000 >"$T/s/x/t"
"$PRNG" bin 4 150000 >"$T/s/b/b"
echo c >"$T/s/c/c"
ferry pool create tank "$T/tank"
ferry create -o source="$T/s/h" tank/h
ferry create -o source="$T/s/a" tank/h/a
ferry create -o source="$T/s/x" tank/h/a/x
ferry create -o source="$T/s/b" -o compression=gzip-1 tank/h/b
ferry set user:note=top ferry:keep-daily=7 tank/h
ferry set user:note=a tank/h/a
# snap N: snapshot N of every dataset but tank/h/c (and tank/h/d once made)
snap() { for d in $DSS; do ferry snapshot "tank/$d@$1"; done; }
snap 1
"$PRNG" text 5 50000 >>"$T/s/h/t"
"$PRNG" bin 6 100000 >"$T/s/a/b2"
snap 2
ferry create -o source="$T/s/c" tank/h/c
ferry snapshot tank/h/c@c1
ferry pool create -o compression=lz4 bk "$T/bk"
ferry create bk/c1
ferry create bk/c2
token app bk/c1 append
token rd bk/c1 read
token oth bk/c2 append
token rev bk/c1 write
echo "ferry_$(printf '%064d' 7)" >"$T/tok.wrong"
serve_start bk
R=$URL/bk/c1/h
sendR() { run "$FERRY" send -R "$@"; }
# tree DS: the names below DS and each snapshot's guid (a dataset's own
# guid is the receiving pool's, as in zfs)
tree() {
	"$FERRY" list -H -r -t all -o name,guid "$1" |
		awk -F'\t' -v p="$1" '{ n = substr($1, length(p) + 1); print (index(n, "@") ? n "\t" $2 : n) }'
}
props() {
	"$FERRY" get -r -H -o name,property,value,source user:note,ferry:keep-daily "$1" |
		sed "s|$1|@|g"
}

# ---- refused: one line, nothing changes ----
st0=$(pool_state bk)
refused 1 "^ferry: cannot send 'tank/h@2' to '$R': .*401" "no token: 401, one line" \
	"$FERRY" send -R tank/h@2 --to "$R"
refused 1 "^ferry: cannot send 'tank/h@2' to '$R': .*401" "a wrong token: 401" \
	"$FERRY" send -R tank/h@2 --to "$R" --token-file "$T/tok.wrong"
ferry token revoke --tokens "$TOKENS" rev 2>/dev/null
serve_hup
refused 1 "^ferry: cannot send 'tank/h@2' to '$R': .*401" "a revoked token, after SIGHUP: 401" \
	"$FERRY" send -R tank/h@2 --to "$R" --token-file "$T/tok.rev"
refused 1 "^ferry: cannot send 'tank/h@2' to '$R': .*403" "a read token: 403" \
	"$FERRY" send -R tank/h@2 --to "$R" --token-file "$T/tok.rd"
refused 1 "^ferry: cannot send 'tank/h@2' to '$R': .*403: 'bk/c1/h' is outside the token's scope" \
	"another client's token: 403" "$FERRY" send -R tank/h@2 --to "$R" --token-file "$T/tok.oth"
refused 2 "-R --to finds the newest snapshot each dataset shares with the server" \
	"-i is refused with -R --to (the base is the server's)" \
	"$FERRY" send -R -i @1 tank/h@2 --to "$R" --token-file "$T/tok.app"
refused 1 "snapshot 'tank/h@9' does not exist" "a snapshot the top lacks is refused" \
	"$FERRY" send -R tank/h@9 --to "$R" --token-file "$T/tok.app"
is "$(pool_state bk)" "$st0" "none of them changed anything on the server"

# ---- an append token in scope ----
sendR -v tank/h@2 --to "$R" --token-file "$T/tok.app"
is "$rc" 0 "send -R --to with an append token"
like "$(cat "$T/err")" "tank/h/c: left out" "a child without the snapshot is left out, as by send -R"
ferry pool create -o compression=lz4 ctl2 "$T/ctl2"
ferry create ctl2/c1
ferry send -R tank/h@2 | ferry recv ctl2/c1/h
is "$(tree bk/c1/h)" "$(tree ctl2/c1/h)" "the server has the datasets and snapshots send -R | recv leaves"
is "$(props bk/c1/h)" "$(props ctl2/c1/h)" "and the same properties, with the same sources"
is "$(ferry get -H -o value,source ferry:keep-daily bk/c1/h | tr '\t' ' ')" "7 received" \
	"the retention properties too (unlike sync)"
is "$(ferry holds -H -r tank/h@2 | wc -l):$(ferry list -H -t bookmark -r -o name tank | wc -l)" "0:0" \
	"the source is left as it was: no hold, no bookmark"
sendR -v tank/h@2 --to "$R" --token-file "$T/tok.app"
is "$rc:$(grep -c 'on the server already' "$T/err")" "0:4" "again: every dataset is up to date"

# a later snapshot and a new child
"$PRNG" text 7 30000 >>"$T/s/x/t"
ferry create -o source="$T/s/d" tank/h/d
echo d >"$T/s/d/d"
DSS="$DSS h/d"
snap 3
sendR -v tank/h@3 --to "$R" --token-file "$T/tok.app"
is "$rc" 0 "a later snapshot"
like "$(grep '^tank/h/a/x ->' "$T/err")" "sent 1 snapshot incremental from @2 to @3" \
	"each dataset from the newest snapshot it shares with the server"
like "$(grep '^tank/h/d ->' "$T/err")" "sent 1 snapshot in full to @3" "a new child in full"
is "$(ferry list -H -r -t snapshot -o name bk/c1/h | grep -c '@3$')" 5 "all five have @3"

# a partial receive the server kept is resumed
"$PRNG" bin 9 300000 >"$T/s/a/b3"
snap 4
ferry send -p -i @3 tank/h/a@4 >"$T/a4.s"
head -c 150000 "$T/a4.s" >"$T/a4.cut"
req "$(tok app)" PUT /v1/receive/bk/c1/h/a --data-binary @"$T/a4.cut"
req "$(tok app)" GET /v1/receive/bk/c1/h/a
like "$(json_get receive_resume_token)" '^1-' "(a cut upload left a partial receive)"
sendR -v tank/h@4 --to "$R" --token-file "$T/tok.app"
is "$rc" 0 "the next send -R"
like "$(grep '^tank/h/a ->' "$T/err")" "resuming a partial receive" "resumes it"
is "$(ferry get -H -o value receive_resume_token bk/c1/h/a):$(ferry list -H -r -t snapshot -o name bk/c1/h | grep -c '@4$')" \
	"-:5" "and completes it, with the others"

# cut uploads, resumed on their own
proxy_start cut_proxy.py "$T/proxy.log" "$PORT" "20000,3000" ""
"$PRNG" bin 8 400000 >"$T/s/h/big"
snap 5
sendR tank/h@5 --to "$PURL/bk/c1/h" --token-file "$T/tok.app"
is "$rc" 0 "send -R through two cut uploads"
[ "$rc" = 0 ] || diag "$(cat "$T/err")"
is "$(grep -c '^put [0-9]* [0-9]* cut$' "$T/proxy.log")" 2 "(the proxy cut two)"
is "$(ferry list -H -r -t snapshot -o name bk/c1/h | grep -c '@5$'):$(ferry list -H -r -o receive_resume_token bk/c1/h | sort -u)" \
	"5:-" "every dataset got @5, no partial receive left"
kill "$PROXY_PID"
wait "$PROXY_PID" 2>/dev/null
PROXY_PID=

# append: a dataset that went on without the source is refused, not rolled back
mkdir "$T/local"
echo here >"$T/local/f"
ferry snapshot --from "$T/local" bk/c1/h/b@local
snap 6
sendR tank/h@6 --to "$R" --token-file "$T/tok.app"
like "$rc:$(wc -l <"$T/err")" "^1:1$" "a dataset that went on without the source: exit 1, one line"
like "$(cat "$T/err")" "tank/h/b -> $R/b: .*1 snapshot\(s\) after the common base @5" "naming it"
is "$(ferry list -H -t snapshot -o name bk/c1/h/b | tail -1)" "bk/c1/h/b@local" "nothing is rolled back"
is "$(ferry list -H -t snapshot -o name bk/c1/h/d | tail -1)" "bk/c1/h/d@5" \
	"and the run stopped there, as a package would"
ferry destroy bk/c1/h/b@local
sendR tank/h@6 --to "$R" --token-file "$T/tok.app"
is "$rc" 0 "once it is gone, the same command completes"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

ferry pool create -o compression=lz4 ctl "$T/ctl"
ferry create ctl/c1
ferry send -R tank/h@6 | ferry recv ctl/c1/h
is "$(tree bk/c1/h)" "$(tree ctl/c1/h)" "the server's tree is the one send -R | recv makes"
is "$(props bk/c1/h)" "$(props ctl/c1/h)" "with the same properties"
after_check bk/c1 ctl/c1 "send -R --to, step by step"
done_testing
