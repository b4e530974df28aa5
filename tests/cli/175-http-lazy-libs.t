#!/bin/sh
# libcurl and libmicrohttpd are not linked: the first command that speaks
# HTTP loads them (net/lazy.c). With a broken copy of either found first
# (LD_LIBRARY_PATH: a file that is no library, then a library without the
# functions), the commands that need it fail with one line naming it and
# exit 1, and change nothing; every other command works as before. Then
# the real libraries: the same send over HTTP, and the data it leaves.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
# the sonames ferry was built to load (GNUmakefile reads them the same way)
soname() { objdump -p "$(${CC:-cc} -print-file-name="$1.so")" | sed -n 's/^ *SONAME *//p'; }
CURL_SO=$(soname libcurl)
MHD_SO=$(soname libmicrohttpd)
like "$CURL_SO $MHD_SO" '^libcurl[-a-z]*\.so\.[0-9]+ libmicrohttpd\.so\.[0-9]+$' \
	"the sonames are known"
mkdir -p "$T/notlib" "$T/empty"
echo "not a library" >"$T/notlib/$CURL_SO"
echo "not a library" >"$T/notlib/$MHD_SO"
echo "int ferry_test_nothing_here;" >"$T/e.c"
${CC:-cc} -shared -fPIC -Wl,-soname,"$CURL_SO" -o "$T/empty/$CURL_SO" "$T/e.c"
${CC:-cc} -shared -fPIC -Wl,-soname,"$MHD_SO" -o "$T/empty/$MHD_SO" "$T/e.c"

S=$T/src
mkdir -p "$S/d"
python3 -c 'import os, sys
for i in range(40):
    open(os.path.join(sys.argv[1], "d", "f%02d" % i), "wb").write(os.urandom(i * 997))' "$S"
ferry pool create tank "$T/tank"
ferry pool create -o compression=lz4 bk "$T/bk"
ferry pool create -o compression=lz4 ctl "$T/ctl"
token c bk append
before_bk=$(figures bk)

# ---- not a library: what needs it fails, the rest works ----
NL="LD_LIBRARY_PATH=$T/notlib"
run env "$NL" "$FERRY" create -o source="$S" -o recordsize=16K tank/fs
is "$rc" 0 "create works with broken HTTP libraries first on the path"
run env "$NL" "$FERRY" snapshot tank/fs@a
is "$rc" 0 "snapshot works"
run env "$NL" sh -c "'$FERRY' send tank/fs@a | '$FERRY' recv ctl/fs"
is "$rc" 0 "send | recv works"
before_tank=$(figures tank)
before_ctl=$(figures ctl)
refused 1 "^ferry: .*libcurl: cannot load $CURL_SO: .*$CURL_SO" \
	"send --to: one line naming the library it cannot load" \
	env "$NL" "$FERRY" send tank/fs@a --to "http://127.0.0.1:9/bk/fs" --token-file "$T/tok.c"
refused 1 "libcurl: cannot load $CURL_SO" "recv --from: the same" \
	env "$NL" "$FERRY" recv --from "http://127.0.0.1:9/bk/fs@a" ctl/other --token-file "$T/tok.c"
refused 1 "libcurl: cannot load $CURL_SO" "list of a URL: the same" \
	env "$NL" "$FERRY" list "http://127.0.0.1:9/bk" --token-file "$T/tok.c"
refused 1 "^ferry: .*libmicrohttpd: cannot load $MHD_SO" \
	"serve: one line naming the library it cannot load" \
	env "$NL" "$FERRY" serve --listen 127.0.0.1:0 --tokens "$TOKENS" bk

# ---- a library without the functions ----
EL="LD_LIBRARY_PATH=$T/empty"
refused 1 "libcurl: $CURL_SO has no curl_global_init" \
	"send --to: one line naming the function the library lacks" \
	env "$EL" "$FERRY" send tank/fs@a --to "http://127.0.0.1:9/bk/fs" --token-file "$T/tok.c"
refused 1 "libmicrohttpd: $MHD_SO has no MHD_start_daemon" "serve: the same" \
	env "$EL" "$FERRY" serve --listen 127.0.0.1:0 --tokens "$TOKENS" bk
run env "$EL" "$FERRY" list -H -o name tank/fs
is "$(cat "$T/out")" "tank/fs" "list works"

is "$(figures tank)" "$before_tank" "the source pool is as it was"
is "$(figures ctl)" "$before_ctl" "the receiving pool is as it was"
is "$(figures bk)" "$before_bk" "the served pool is as it was"

# ---- the real libraries ----
serve_start bk
run "$FERRY" send tank/fs@a --to "$URL/bk/fs" --token-file "$T/tok.c"
is "$rc" 0 "send --to with the real libraries"
run "$FERRY" list -H -o name "$URL/bk/fs" --token-file "$T/tok.c"
is "$(cat "$T/out")" "bk/fs" "list of the URL"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"
after_check bk/fs ctl/fs "the dataset sent over HTTP, after gc, against the pipe's"
done_testing
