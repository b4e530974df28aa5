#!/bin/sh
# Backups the cron way over HTTPS (docs/ferry-http.7): a full and three
# incrementals with `ferry send --to https://...` (an append token, a
# certificate this test makes) into a gzip-7 backup pool. With
# --compress=auto (the default) the client asks the target's compression
# and encodes every block with it: every received dataset is gzip-7 and
# every receive report counts 0 recompressed blocks. Then a restore over
# HTTPS with `ferry recv --from` into a new lz4 pool, identical entry for
# entry. TLS is verified: without the certificate the client refuses.
# Ends with after_check of both pools against controls fed through pipes.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
mkcert
CACERT=$T/cert.pem
S=$T/src
mkdir -p "$S/docs" "$S/bin"
"$PRNG" text 1 3000000 >"$S/docs/a.txt"
"$PRNG" text 2 700000 >"$S/docs/b.txt"
"$PRNG" bin 3 600000 >"$S/bin/blob"
seq 1 100000 >"$S/numbers"
ferry pool create tank "$T/tank"
ferry create -o source="$S" tank/home
ferry pool create -o compression=gzip-7 bk "$T/bk"
ferry create bk/host1
token client bk/host1 append
serve_start --tls-cert "$T/cert.pem" --tls-key "$T/key.pem" bk
like "$URL" '^https://127\.0\.0\.1:[0-9]+$' "the server listens with TLS on a free port"
export FERRY_TOKEN="$(tok client)"

# TLS is verified: a self-signed server is refused without its certificate
ferry snapshot tank/home@d1
refused 1 "certificate|SSL|TLS" "without --cacert the self-signed server is refused" \
	"$FERRY" send tank/home@d1 --to "$URL/bk/host1/home"
is "$(ferry list -H -o name bk/host1/home 2>/dev/null)" "" "and nothing was received"

# d1 full, d2..d4 incrementals from the one before, as cron runs them
prev=
for d in d1 d2 d3 d4; do
	case $d in
	d2) "$PRNG" text 4 400000 >>"$S/docs/a.txt"; echo new >"$S/new" ;;
	d3) rm "$S/docs/b.txt"; "$PRNG" bin 5 300000 >"$S/bin/blob2"; mv "$S/numbers" "$S/n2"
	    "$PRNG" text 7 200000 >"$S/docs/c.txt" ;;
	d4) "$PRNG" text 6 1000 >"$S/docs/small"; truncate -s 100000 "$S/docs/a.txt" ;;
	esac
	[ "$d" = d1 ] || ferry snapshot "tank/home@$d"
	run "$FERRY" send -v ${prev:+-i "@$prev"} "tank/home@$d" --to "$URL/bk/host1/home" --cacert "$CACERT"
	is "$rc" 0 "send of @$d${prev:+ from @$prev} over HTTPS"
	[ "$rc" = 0 ] || diag "$(cat "$T/err")"
	like "$(cat "$T/err")" "stores blocks as gzip-7" "@$d: the client learnt the target's compression"
	like "$(grep 'blocks:' "$T/out")" " 0 recompressed, " "@$d: the server's report counts 0 recompressed blocks"
	like "$(grep 'blocks:' "$T/out")" "[1-9][0-9]* kept, " "@$d: the server kept blocks as they came"
	prev=$d
done
is "$(ferry list -H -r -t snapshot -o name bk/host1/home | tr '\n' ' ')" \
	"bk/host1/home@d1 bk/host1/home@d2 bk/host1/home@d3 bk/host1/home@d4 " \
	"the backup has the four snapshots"
is "$(ferry get -H -r -t filesystem -o name,value compression bk | tr '\t\n' ': ')" \
	"bk:gzip-7 bk/host1:gzip-7 bk/host1/home:gzip-7 " "every received dataset is gzip-7"
is "$(ferry pool status bk | awk '/^ *(lz4|gzip-[1-689]|zle) /')" "" \
	"the backup pool stores no block in another codec than gzip-7 (or raw)"

# a second client cannot see past its scope, a read token cannot write
token other bk/host2 append
serve_hup
refused 1 "403" "a token for bk/host2 cannot send into bk/host1" \
	env FERRY_TOKEN="$(tok other)" "$FERRY" send tank/home@d4 --to "$URL/bk/host1/x" --cacert "$CACERT"

# restore over HTTPS into a new lz4 pool
ferry pool create -o compression=lz4 new "$T/new"
run "$FERRY" recv -v --from "$URL/bk/host1/home@d1" new/home --cacert "$CACERT"
is "$rc" 0 "recv --from of @d1 over HTTPS"
prev=d1
for d in d2 d3 d4; do
	run "$FERRY" recv -v --from "$URL/bk/host1/home@$d" -i "@$prev" new/home --cacert "$CACERT"
	is "$rc" 0 "recv --from of @$d -i @$prev"
	prev=$d
done
is "$(ferry get -H -o value compression new/home)" lz4 "the restored dataset is lz4"
for d in d1 d2 d3 d4; do
	rm -rf "$TS/a" "$TS/b"
	ferry restore "tank/home@$d" "$TS/a" && ferry restore "new/home@$d" "$TS/b"
	run "$FERRY_TOOLS/treecmp" "$TS/a" "$TS/b"
	is "$rc" 0 "@$d restored from the new pool is identical to the source, entry for entry"
done
is "$(ferry list -H -r -t snapshot -o name,guid new/home | sed 's/^new/X/')" \
	"$(ferry list -H -r -t snapshot -o name,guid tank/home | sed 's/^tank/X/')" \
	"the restored snapshots keep their names and guids"
serve_stop
is "$serve_rc" 0 "SIGTERM stops the server with status 0"
like "$(tail -1 "$SERVE_LOG")" "ferry serve: stopped$" "and it says so"

# controls: the same streams through pipes
ferry pool create -o compression=gzip-7 ctl "$T/ctl"
ferry create ctl/host1
ferry send tank/home@d1 | ferry recv ctl/host1/home
ferry send -i @d1 tank/home@d2 | ferry recv ctl/host1/home
ferry send -i @d2 tank/home@d3 | ferry recv ctl/host1/home
ferry send -i @d3 tank/home@d4 | ferry recv ctl/host1/home
after_check bk/host1 ctl/host1 "four sends over HTTPS"
ferry pool create -o compression=lz4 ctl2 "$T/ctl2"
ferry send -c bk/host1/home@d1 | ferry recv ctl2/home
ferry send -c -i @d1 bk/host1/home@d2 | ferry recv ctl2/home
ferry send -c -i @d2 bk/host1/home@d3 | ferry recv ctl2/home
ferry send -c -i @d3 bk/host1/home@d4 | ferry recv ctl2/home
after_check new ctl2 "four receives over HTTPS"
done_testing
