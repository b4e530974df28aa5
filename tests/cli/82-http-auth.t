#!/bin/sh
# The auth matrix of docs/ferry-http.7 (Authentication, Scope and
# permissions): every endpoint x {no token, wrong token, revoked token,
# read, append, write} x {in scope, out of scope} gets exactly the
# documented status, and a refused request changes nothing: the listing of
# the subtree it aimed at is the same after it. The tokens' scope is bk/in;
# bk/out has the same datasets. A revoked token keeps working until
# SIGHUP, then gets 401, without a restart. Also: append cannot roll back
# (409, nothing changed), a name out of scope is 403 whether it exists or
# not, 401 says WWW-Authenticate: Bearer, and the tokens file holds hashes
# only, mode 0600.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
S=$T/src
mkdir -p "$S"
for i in 1 2 3 4 5 6; do seq $((i * 10000)) $((i * 10000 + 6000)) >"$S/f$i"; done
ferry pool create tank "$T/tank"
ferry create -o source="$S" tank/fs
ferry snapshot tank/fs@s1
echo two >"$S/g"
ferry snapshot tank/fs@s2
echo three >"$S/h"
ferry snapshot tank/fs@s3
ferry send tank/fs@s1 >"$T/s1"
ferry send -i @s1 tank/fs@s2 >"$T/s12"
ferry send -i @s1 tank/fs@s3 >"$T/s13"
head -c $(($(wc -c <"$T/s1") / 2)) "$T/s1" >"$T/s1.cut"
ferry pool create bk "$T/bk"
ferry create bk/in
ferry create bk/out
TOKS="none wrong revoked read append write"
# the targets: append's and write's own in scope; one set shared by the
# requests that must change nothing
tgt() { case $1:$2 in in:append | in:write) echo "bk/$1/$2" ;; *) echo "bk/$1/shared" ;; esac; }
for sc in in out; do
	for t in shared append write; do
		[ "$sc:$t" = out:append ] || [ "$sc:$t" = out:write ] && continue
		d=bk/$sc/$t
		ferry recv "$d" <"$T/s1"                       # PUT target: @s1
		ferry recv "$d-f" <"$T/s1"                     # force target: @s1 @s3
		ferry recv "$d-f" <"$T/s13"
		ferry recv -s "$d-p" <"$T/s1.cut" 2>/dev/null  # a partial receive
		ferry recv "$d-d" <"$T/s1"                     # destroy target: @s1 @s2
		ferry recv "$d-d" <"$T/s12"
	done
done
token read bk/in read
token append bk/in append
token write bk/in write
token revoked bk/in write
is "$(stat -c %a "$TOKENS")" 600 "the tokens file is 0600"
like "$(grep -c "$(tok write | cut -c7-)" "$TOKENS")" "^0$" "the tokens file does not hold a token's text"
serve_start bk
out0=$(pool_state bk/out)

# the revoked token works until SIGHUP
req "$(tok revoked)" GET /v1/datasets/bk/in
is "$status" 200 "a token works"
ferry token revoke --tokens "$TOKENS" revoked 2>/dev/null
req "$(tok revoked)" GET /v1/datasets/bk/in
is "$status" 200 "a revoked token still works before SIGHUP"
serve_hup
req "$(tok revoked)" GET /v1/datasets/bk/in
is "$status" 401 "after SIGHUP the revoked token gets 401, no restart"
is "$(ferry token list --tokens "$TOKENS" -H | cut -f2 | sort | tr '\n' ' ')" "append read write " \
	"token list shows the three left"

# tok_text T: the bearer text of T ('' for none, a well-formed unknown one
# for wrong)
tok_text() {
	case $1 in
	none) ;;
	wrong) echo "ferry_$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')" ;;
	*) tok "$1" ;;
	esac
}
# want TOK EP SCOPE: the documented status
want() {
	case $1 in none | wrong | revoked) echo 401; return ;; esac
	[ "$2" = pools ] && { echo 200; return; }
	[ "$3" = out ] && { echo 403; return; }
	case $2:$1 in
	datasets:* | info:* | send:*) echo 200 ;;
	put:read) echo 403 ;;
	put:*) echo 200 ;;
	force:write | abort:write | destroy:write) echo 200 ;;
	*) echo 403 ;;
	esac
}
bad=0 n=0
for sc in in out; do
	for t in $TOKS; do
		x=$(tok_text "$t")
		d=$(tgt "$sc" "$t")
		for ep in pools datasets info put force abort destroy send; do
			before=$(pool_state "$d" "$d-f" "$d-p" "$d-d")
			case $ep in
			pools) req "$x" GET /v1/pools ;;
			datasets) req "$x" GET "/v1/datasets/$d?depth=-1" ;;
			info) req "$x" GET "/v1/receive/$d" ;;
			put) req "$x" PUT "/v1/receive/$d" -T "$T/s12" ;;
			force) req "$x" PUT "/v1/receive/$d-f?force=1" -T "$T/s12" ;;
			abort) req "$x" DELETE "/v1/receive/$d-p" ;;
			destroy) req "$x" DELETE "/v1/snapshots/$d-d@s1" ;;
			send) req "$x" GET "/v1/send/$d@s1" ;;
			esac
			after=$(pool_state "$d" "$d-f" "$d-p" "$d-d")
			w=$(want "$t" "$ep" "$sc")
			n=$((n + 1))
			if [ "$status" != "$w" ]; then
				bad=$((bad + 1))
				diag "$t $ep $sc: status $status, want $w: $(head -c 300 "$T/body")"
			fi
			# what must change, and what must not
			changed=0
			[ "$before" = "$after" ] || changed=1
			should=0
			[ "$w" = 200 ] && case $ep in put | force | abort | destroy) should=1 ;; esac
			if [ "$changed" != "$should" ]; then
				bad=$((bad + 1))
				diag "$t $ep $sc: changed=$changed, want $should"
			fi
			if [ "$w" = 200 ] && [ "$ep" = send ] && ! "$FERRY" dump <"$T/body" >/dev/null 2>&1; then
				bad=$((bad + 1))
				diag "$t send $sc: the body is not a whole stream"
			fi
			if [ "$w" != 200 ] && ! json_error_ok "$w"; then
				bad=$((bad + 1))
				diag "$t $ep $sc: not a one-line JSON error body: $(head -c 200 "$T/body")"
			fi
		done
	done
done
is "$bad" 0 "$n requests of the matrix: every status as documented, nothing changed that must not (0 wrong)"
is "$(pool_state bk/out)" "$out0" "nothing out of scope changed"
# what the allowed requests did
is "$(ferry list -H -t snapshot -o name bk/in/append bk/in/write bk/in/write-f | tr '\n' ' ')" \
	"bk/in/append@s1 bk/in/append@s2 bk/in/write@s1 bk/in/write@s2 bk/in/write-f@s1 bk/in/write-f@s2 " \
	"append and write received @s2; write's force rolled @s3 back"
is "$(ferry list -H -o name bk/in/write-p 2>/dev/null)" "" \
	"write aborted its partial receive (and the dataset made for it went too)"
like "$(ferry get -H -o value receive_resume_token bk/in/append-p)" '^1-' "append could not abort one"
is "$(ferry list -H -t snapshot -o name bk/in/write-d bk/in/append-d | tr '\n' ' ')" \
	"bk/in/write-d@s2 bk/in/append-d@s1 bk/in/append-d@s2 " "write destroyed a snapshot, append could not"

# append cannot roll back: the base is not the newest snapshot
before=$(pool_state bk/in)
req "$(tok append)" PUT /v1/receive/bk/in/append-f -T "$T/s12"
is "$status" 409 "append: an incremental whose base is not the newest is 409"
like "$(json_get error)" "not the newest snapshot" "and says why"
is "$(pool_state bk/in)" "$before" "and changes nothing"
# out of scope is 403 whether the name exists or not
req "$(tok read)" GET /v1/datasets/bk/nosuch
is "$status" 403 "a missing name out of scope is 403, not 404"
req "$(tok read)" GET /v1/datasets/bk/in/nosuch
is "$status" 404 "a missing name in scope is 404"
req "$(tok read)" GET /v1/datasets/bk
is "$status" 403 "the scope's parent is out of scope"
req "$(tok read)" GET /v1/datasets/bk/in-other
is "$status" 403 "bk/in-other is not below bk/in"
# the 401 answer
curl -sS -D "$T/hdr" -o "$T/body" "$URL/v1/pools" 2>/dev/null
like "$(tr -d '\r' <"$T/hdr" | grep -i '^www-authenticate:')" '^[Ww][Ww][Ww]-[Aa]uthenticate: Bearer realm="ferry"$' \
	"401 comes with WWW-Authenticate: Bearer"
for h in "Basic $(tok write)" "Bearer" "Bearer ferry_zz" "Bearer $(tok write)x" "bearer $(tok read)"; do
	status=$(curl -sS -o /dev/null -w '%{http_code}' -H "Authorization: $h" "$URL/v1/pools")
	case $h in bearer*) w=200 ;; *) w=401 ;; esac
	is "$status" "$w" "Authorization: $(echo "$h" | cut -c1-14)...: $w"
done
serve_stop
is "$serve_rc" 0 "the server stops cleanly"
ferry gc bk >/dev/null
bad=0
for s in $(ferry list -H -r -t snapshot -o name bk); do
	rm -rf "$TS/r"
	ferry restore "$s" "$TS/r" || diag "restore $s failed"
	case $s in *@s1) w=s1 ;; *@s2) w=s2 ;; *) w=s3 ;; esac
	rm -rf "$TS/w"
	ferry restore "tank/fs@$w" "$TS/w"
	"$FERRY_TOOLS/treecmp" "$TS/w" "$TS/r" >/dev/null || { bad=1; diag "$s differs"; }
done
is "$bad" 0 "after gc every snapshot of bk restores identical to its source"
done_testing
