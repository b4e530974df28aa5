#!/bin/sh
# Issue 15, item 2: ferry scrub --repair-from URL heals a damaged pool from
# a replica behind ferry serve (docs/ferry-http.7, GET /v1/blocks and GET
# /v1/nodes): every snapshot restores identical afterwards (after_check
# against a control). The server gives only blocks and nodes that a
# snapshot (or bookmark) in the token's scope references: a token for
# another dataset, one whose name is a LIKE pattern of this one's (bk/f_
# next to bk/fs), gets 404 for what it does not cover and the damage stays
# reported; a server that answers with wrong bytes is refused (nothing
# written, the damage stays); the statuses are those the page documents
# (401, 403, 400, 404, 405), and a refusal of the token ends the repair
# with exit 1 and one line, the pool as before.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
LIB="$FERRY_SRC/tests/cli/scrub_lib.py"
unset FERRY_TOKEN
S="$T/src"
mkdir -p "$T/p" "$S/d" "$T/other"
seq 1 30000 >"$S/numbers"
head -c 90000 /dev/urandom >"$S/d/random"
echo small >"$S/d/small"
head -c 50000 /dev/urandom >"$T/other/o"
ferry pool create -o compression=lz4 tank "$T/p/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
seq 40000 42000 >>"$S/numbers"
head -c 30000 /dev/urandom >"$S/d/new"
ferry snapshot tank/fs@b
ferry bookmark tank/fs@a tank/fs#m
# the replica (another codec: its copies are encoded again as lz4), a
# dataset beside it with data of its own, and the control
ferry pool create -o compression=gzip-6 bk "$T/p/bk"
ferry send -R tank/fs@b | ferry recv bk/fs
ferry create -o source="$T/other" bk/f_
ferry snapshot bk/f_@o
ferry pool create -o compression=lz4 ctl "$T/p/ctl"
ferry send -R tank/fs@b | ferry recv ctl/fs
ferry bookmark ctl/fs@a ctl/fs#m
cp -a "$T/p/tank" "$T/tank.clean"
fresh() { rm -rf "$T/p/tank"; cp -a "$T/tank.clean" "$T/p/tank"; }
token rd bk/fs read
token app bk/fs append
token oth bk/f_ read
echo "ferry_$(printf '%064d' 7)" >"$T/tok.wrong"
serve_start bk
# likes GOT REGEX DESC: REGEX (Python's) matched against the whole text,
# '.' matching newlines too (lib.sh's like is grep's: line by line)
likes() {
	if printf '%s' "$1" | python3 -c 'import re, sys; sys.exit(0 if re.search(sys.argv[1], sys.stdin.read(), re.S) else 1)' "$2"; then
		ok "$3"; else not_ok "$3"; diag "got:  $1" "want: /$2/"; fi
}
errs() { sqlite3 "$T/p/tank/catalog.db" "SELECT count(*) FROM scrub_errors"; }

# ---- damaged blocks and nodes, healed over HTTP ------------------------------------
python3 "$LIB" flip-blocks "$T/p/tank" 8 1541 >"$T/flips"
python3 "$LIB" flip-nodes "$T/p/tank" 2 1542 >>"$T/flips"
run ferry scrub tank
is "$rc" 5 "the damaged pool scrubs with exit 5"
cp -a "$T/p/tank" "$T/tank.damaged"
run env FERRY_TOKEN="$(tok rd)" "$FERRY" scrub --repair-from "$URL/bk/fs" tank
likes "$rc:$(cat "$T/out" "$T/err")" "^0:  pool: tank
  scan: scrub repaired [0-9.]+[KM]? in [0-9:]{8} with 0 errors on .*
repair: 10 damaged items healed from '$URL/bk/fs' \([0-9.]+[KM]? written\), 0 not held there
errors: No known data errors\n?$" "scrub --repair-from URL: 8 blocks and 2 nodes healed, exit 0"
is "$(grep -c 'GET /v1/blocks/bk/fs 200' "$SERVE_LOG.new"):$(grep -c 'GET /v1/nodes/bk/fs 200' "$SERVE_LOG.new")" \
	"8:2" "one GET per damaged block and node, each answered 200"
run ferry scrub tank
is "$rc:$(sed -n 3p "$T/out")" "0:errors: No known data errors" "a scrub after the repair finds nothing"
after_check tank ctl "repaired over HTTP"

# an append token reads too; --token-file works as with send --to
fresh
python3 "$LIB" flip-blocks "$T/p/tank" 2 1543 >/dev/null
run ferry scrub --repair-from "$URL/bk/fs" --token-file "$T/tok.app" tank
likes "$rc:$(cat "$T/out")" "^0:.*repair: 2 damaged items healed from" "an append token (from --token-file) may read blocks"

# ---- scope: a token for bk/f_ reads nothing of bk/fs ---------------------------------
rm -rf "$T/p/tank"; cp -a "$T/tank.damaged" "$T/p/tank"
n0=$(errs)
run env FERRY_TOKEN="$(tok oth)" "$FERRY" scrub --repair-from "$URL/bk/f_" tank
likes "$rc:$(cat "$T/out")" "^5:.*repair: 0 damaged items healed from '$URL/bk/f_' \(0B written\), 10 not held there
errors: Permanent errors have been detected in the following files:" \
	"out of scope (bk/f_, whose '_' a LIKE would take for any byte): nothing healed, exit 5"
is "$(errs)" "$n0" "every damage stays reported"
blk=$(awk '$1 == "block" { print $2; exit }' "$T/flips")
node=$(awk '$1 == "node" { print $2; exit }' "$T/flips")
req "$(tok oth)" GET "/v1/blocks/bk/f_?hash=$blk"
is "$status:$(json_error_ok 404 && echo json)" "404:json" "a block bk/fs holds, asked for through bk/f_: 404"
req "$(tok oth)" GET "/v1/nodes/bk/f_?hash=$node"
is "$status" 404 "a node of bk/fs's trees, asked for through bk/f_: 404"
req "$(tok oth)" GET "/v1/blocks/bk/fs?hash=$blk"
is "$status:$(json_error_ok 403 && echo json)" "403:json" "a dataset outside the token's scope: 403"
run env FERRY_TOKEN="$(tok oth)" "$FERRY" scrub --repair-from "$URL/bk/fs" tank
like "$rc:$(wc -l <"$T/err"):$(cat "$T/err")" "^1:1:ferry: cannot repair 'tank' from '$URL/bk/fs': the server answered 403: " \
	"a repair through a dataset the token does not cover: exit 1, one line"
is "$(errs)" "$n0" "and the damage stays reported"

# ---- the documented statuses ---------------------------------------------------------
req "$(tok rd)" GET "/v1/blocks/bk/fs?hash=$blk"
h=$(python3 -c 'import hashlib, sys; print(hashlib.blake2b(open(sys.argv[1], "rb").read(), digest_size=32).hexdigest())' "$T/body")
is "$status:$h" "200:$blk" "200: the block's logical bytes, which hash to the hash asked for"
req "$(tok rd)" GET "/v1/nodes/bk/fs?hash=$node"
h=$(python3 -c '
import hashlib, sys; b = open(sys.argv[1], "rb").read()
print(hashlib.blake2b(b, digest_size=32).hexdigest())' "$T/body")
is "$status:$h" "200:$node" "200 for a node in bk/fs's trees: its type byte and bytes, which hash to it"
req "" GET "/v1/blocks/bk/fs?hash=$blk"
is "$status:$(json_error_ok 401 && echo json)" "401:json" "no token: 401"
req "$(tok wrong)" GET "/v1/blocks/bk/fs?hash=$blk"
is "$status" 401 "an unknown token: 401"
req "$(tok rd)" GET "/v1/blocks/bk/fs?hash=12ab"
is "$status:$(json_error_ok 400 && echo json)" "400:json" "a hash that is not 64 hexadecimal digits: 400"
req "$(tok rd)" GET "/v1/blocks/bk/fs"
is "$status" 400 "no hash: 400"
req "$(tok rd)" GET "/v1/blocks/bk/fs@b?hash=$blk"
is "$status" 400 "a snapshot name where a dataset goes: 400"
req "$(tok rd)" GET "/v1/nodes/bk/fs?hash=$(printf '%064d' 0)"
is "$status" 404 "a node nobody has: 404"
req "$(tok rd)" DELETE "/v1/blocks/bk/fs?hash=$blk"
is "$status" 405 "DELETE: 405"
run env FERRY_TOKEN="$(tok wrong)" "$FERRY" scrub --repair-from "$URL/bk/fs" tank
like "$rc:$(wc -l <"$T/err"):$(cat "$T/err")" "^1:1:ferry: cannot repair 'tank' from '$URL/bk/fs': the server answered 401: " \
	"a wrong token: exit 1, one line"
is "$(errs)" "$n0" "and the damage stays reported"

# ---- a server that answers with wrong bytes -----------------------------------------
cat >"$T/liar.py" <<'EOF'
import http.server, sys
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        # the size of a block of the pool, the bytes of none
        body = (b'\x02' if '/v1/nodes/' in self.path else b'') + b'x' * 16384
        self.send_response(200)
        self.send_header('Content-Type', 'application/x-ferry-block')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *a):
        pass
s = http.server.HTTPServer(('127.0.0.1', 0), H)
print(s.server_address[1], flush=True)
s.serve_forever()
EOF
"$PYTHON" "$T/liar.py" >"$T/liar.port" &
PROXY_PID=$!
for _w in $(seq 1 100); do [ -s "$T/liar.port" ] && break; sleep 0.05; done
packs=$(ls "$T/p/tank/packs" | sort)
run env FERRY_TOKEN="$(tok rd)" "$FERRY" scrub --repair-from "http://127.0.0.1:$(cat "$T/liar.port")/bk/fs" tank
likes "$rc:$(cat "$T/out")" "^5:.*repair: 0 damaged items healed from .* \(0B written\), 0 not held there, 10 refused \(the copy did not match its hash\)" \
	"wrong bytes from the server: every copy refused, exit 5"
is "$(errs):$(ls "$T/p/tank/packs" | sort | tr '\n' ' ')" "$n0:$(echo "$packs" | tr '\n' ' ')" \
	"nothing written, every damage stays reported"
kill "$PROXY_PID"; wait "$PROXY_PID" 2>/dev/null; PROXY_PID=

refused 2 "--token-file, --cacert and --timeout go with --repair-from URL" \
	"--token-file with a pool to repair from: usage error" ferry scrub --repair-from bk --token-file "$T/tok.rd" tank
serve_stop
is "$serve_rc" 0 "the server stops cleanly"
done_testing
