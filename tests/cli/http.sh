# tests/cli/http.sh — sourced by the HTTP tests (tests/cli/8?-*.t) after
# lib.sh: a real `ferry serve` on 127.0.0.1 (a port the kernel picks), its
# tokens, a self-signed certificate made with openssl, raw requests with
# curl. Every server a test starts is stopped at exit, whatever happens.
# The statuses and bodies checked are those of docs/ferry-http.7.
SERVE_PID=
# the system's python3 starts faster than a shim in front of it
PYTHON=$( [ -x /usr/bin/python3 ] && echo /usr/bin/python3 || command -v python3)
SERVE_LOG=$T/serve.log
TOKENS=$T/tokens
_http_cleanup() {
	if [ -n "$SERVE_PID" ]; then
		kill -TERM "$SERVE_PID" 2>/dev/null
		wait "$SERVE_PID" 2>/dev/null
	fi
	[ -n "${PROXY_PID:-}" ] && kill "$PROXY_PID" 2>/dev/null && wait "$PROXY_PID" 2>/dev/null
	lib_cleanup
}
trap _http_cleanup EXIT

# token NAME SCOPE PERM: makes a token, prints nothing; its text is in
# $T/tok.NAME
token() {
	"$FERRY" token create --tokens "$TOKENS" --name "$1" --scope "$2" --perm "$3" \
		>"$T/tok.$1" 2>>"$T/token.err" || { echo "token create $1 failed" >&2; cat "$T/token.err" >&2; }
}
tok() { cat "$T/tok.$1"; }

# upload_fixture: snapshot tank/fs@a of the tree in $S (16K records), and
# an lz4 pool bk served with an append token c, which FERRY_TOKEN holds
upload_fixture() {
	"$FERRY" pool create tank "$T/tank"
	"$FERRY" create -o source="$S" -o recordsize=16K tank/fs
	"$FERRY" snapshot tank/fs@a
	"$FERRY" pool create -o compression=lz4 bk "$T/bk"
	token c bk append
	serve_start bk
	FERRY_TOKEN=$(tok c)
	export FERRY_TOKEN
}

# mkcert: a self-signed certificate for 127.0.0.1 in $T/cert.pem, $T/key.pem
mkcert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
		-keyout "$T/key.pem" -out "$T/cert.pem" -days 2 -subj /CN=127.0.0.1 \
		-addext subjectAltName=IP:127.0.0.1 >/dev/null 2>&1
}

# serve_start [SERVE OPTIONS] POOL...: starts the server on a free port;
# sets PORT, SERVE_PID, URL (http:// or https:// with --tls-cert)
serve_start() {
	_scheme=http
	case " $* " in *" --tls-cert "*) _scheme=https ;; esac
	: >"$SERVE_LOG.new"
	case " $* " in
	*" --listen "*) "$FERRY" serve --tokens "$TOKENS" "$@" 2>"$SERVE_LOG.new" & ;;
	*) "$FERRY" serve --listen 127.0.0.1:0 --tokens "$TOKENS" "$@" 2>"$SERVE_LOG.new" & ;;
	esac
	SERVE_PID=$!
	_i=0
	PORT=
	while [ $_i -lt 100 ]; do
		PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$SERVE_LOG.new")
		[ -n "$PORT" ] && break
		kill -0 "$SERVE_PID" 2>/dev/null || break
		sleep 0.05
		_i=$((_i + 1))
	done
	URL=$_scheme://127.0.0.1:$PORT
	[ -n "$PORT" ] || { echo "# the server did not start:" >&2; sed 's/^/# /' "$SERVE_LOG.new" >&2; }
}
# proxy_start SCRIPT ARGS...: starts tests/cli/SCRIPT, a proxy in front of
# the server that writes its port to the file it gets as first argument
# (then ARGS); waits for that port; sets PROXY_PID and PURL (its URL)
proxy_start() {
	_ps=$1
	shift
	rm -f "$T/pport"
	"$PYTHON" "$FERRY_SRC/tests/cli/$_ps" "$T/pport" "$@" &
	PROXY_PID=$!
	_i=0
	while [ ! -s "$T/pport" ] && [ $_i -lt 100 ]; do sleep 0.05; _i=$((_i + 1)); done
	PURL=http://127.0.0.1:$(cat "$T/pport")
}
# serve_stop: SIGTERM, and the server's exit status in $serve_rc
serve_stop() {
	kill -TERM "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID"
	serve_rc=$?
	SERVE_PID=
	cat "$SERVE_LOG.new" >>"$SERVE_LOG"
}
# serve_hup: SIGHUP, and waits until the server says it reread the tokens
serve_hup() {
	_n0=$(grep -c "tokens reloaded\|SIGHUP:" "$SERVE_LOG.new")
	kill -HUP "$SERVE_PID"
	_i=0
	while [ $_i -lt 100 ] && [ "$(grep -c "tokens reloaded\|SIGHUP:" "$SERVE_LOG.new")" = "$_n0" ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
}
serve_alive() { kill -0 "$SERVE_PID" 2>/dev/null; }

# req TOKEN METHOD PATH [CURL ARGS...]: a raw request; the status in
# $status, the body in $T/body
req() {
	_t=$1 _m=$2 _p=$3
	shift 3
	if [ -n "$_t" ]; then
		status=$(curl -sS -o "$T/body" -w '%{http_code}' -X "$_m" ${CACERT:+--cacert "$CACERT"} \
			-H "Authorization: Bearer $_t" "$@" "$URL$_p" 2>"$T/curl.err")
	else
		status=$(curl -sS -o "$T/body" -w '%{http_code}' -X "$_m" ${CACERT:+--cacert "$CACERT"} \
			"$@" "$URL$_p" 2>"$T/curl.err")
	fi
}
# json_get KEY...: a member of the JSON body in $T/body (python3)
json_get() {
	"$PYTHON" -c 'import json,sys
v=json.load(open(sys.argv[1]))
for k in sys.argv[2:]:
    v = v[int(k)] if isinstance(v, list) else v.get(k)
print("null" if v is None else (json.dumps(v) if isinstance(v,(dict,list,bool)) else v))' "$T/body" "$@"
}
# pool_state DATASET...: what they and everything below them hold (a
# missing one is left out), to show that nothing changed
pool_state() {
	"$FERRY" list -H -p -r -t all -o name,guid,used,referenced,receive_resume_token "$@" 2>/dev/null
}
# json_error_ok STATUS: the body in $T/body is one line of JSON with that
# status and a one-line message (docs/ferry-http.7, Errors)
json_error_ok() {
	[ "$(wc -l <"$T/body")" = 1 ] &&
		grep -Eq '^\{"status": '"$1"', "error": "([^"\\]|\\.)*"\}$' "$T/body"
}
