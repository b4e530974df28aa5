#!/bin/sh
# Serving many (docs/ferry-http.7, LIMITS; docs/ferry-serve.8): 8 clients
# send into 8 datasets at once, bandwidth-capped with --limit-rate so they
# overlap, the server has several receives at once and all succeed; while a receive runs
# into a dataset, a second one into it (or above or below it), an abort
# and a destroy there get 409 at once, and another dataset takes a receive
# meanwhile. A client that stalls mid-body is cut off after the idle
# timeout, its partial state kept, and `ferry send --to` later resumes it.
# SIGTERM during an upload stops the server cleanly (exit 0) with the
# receive's partial state kept, and the client, still retrying, resumes
# once the server is back. The server's memory does not grow with the size
# of a body. Ends with after_check against a control fed through pipes.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
PRNG="$FERRY_TOOLS/prng"
S=$T/src
mkdir -p "$S"
"$PRNG" text 1 900000 >"$S/text"
"$PRNG" bin 2 600000 >"$S/bin"
ferry pool create tank "$T/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
mkdir -p "$T/big"
"$PRNG" bin 3 40000000 >"$T/big/blob"
ferry create -o source="$T/big" tank/big
ferry snapshot tank/big@a
ferry send tank/fs@a >"$T/stream"
SIZE=$(wc -c <"$T/stream")
ferry pool create bk "$T/bk"
ferry create bk/c
token w bk write
serve_start --timeout 2 bk
export FERRY_TOKEN="$(tok w)"
hwm() { awk '/^VmHWM/ { print $2 }' "/proc/$SERVE_PID/status"; }

# 8 at once, each capped so that one takes about a second and a half
RATE=$((SIZE * 2 / 3))
t0=$(date +%s.%N)
for i in 1 2 3 4 5 6 7 8; do
	"$FERRY" send tank/fs@a --to "$URL/bk/c/$i" --limit-rate "$RATE" >"$T/c$i.out" 2>"$T/c$i.err" &
	eval "pid$i=\$!"
done
# while they run, the server itself says how many receives it has at
# once: at least two in the same moment shows they are served in parallel
most=0
while :; do
	n=0 alive=0
	for i in 1 2 3 4 5 6 7 8; do
		eval "kill -0 \$pid$i 2>/dev/null" && alive=1
		req "$(tok w)" GET "/v1/receive/bk/c/$i" && [ "$(json_get receiving)" = true ] && n=$((n + 1))
	done
	[ "$n" -gt "$most" ] && most=$n
	[ "$most" -ge 2 ] || [ "$alive" = 0 ] && break
done
bad=0
for i in 1 2 3 4 5 6 7 8; do
	eval "wait \$pid$i" || { bad=$((bad + 1)); diag "client $i: $(cat "$T/c$i.err")"; }
done
t1=$(date +%s.%N)
is "$bad" 0 "8 clients sending at once all succeed"
# at once: the last client started before the first one ended (an order
# of events, not a duration: the machine's load does not change it)
el=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
like "$most" '^[2-8]$' "the server received them at once ($most seen at the same moment; all 8 in ${el}s, one alone takes about 1.5s)"
is "$(ferry list -H -r -t snapshot -o name bk/c | wc -l)" 8 "8 snapshots received"
rm -rf "$TS/a"
ferry restore tank/fs@a "$TS/a"
bad=0
for i in 1 2 3 4 5 6 7 8; do
	rm -rf "$TS/b"
	ferry restore "bk/c/$i@a" "$TS/b" && "$FERRY_TOOLS/treecmp" "$TS/a" "$TS/b" >/dev/null || bad=$((bad + 1))
done
is "$bad" 0 "each identical to the source"

# busy: a slow receive into bk/busy; the others get 409 at once
"$FERRY" send -v tank/fs@a --to "$URL/bk/busy" --limit-rate $((SIZE / 6)) >"$T/slow.out" 2>"$T/slow.err" &
SLOW=$!
i=0
until req "$(tok w)" GET /v1/receive/bk/busy && [ "$(json_get receiving)" = true ]; do
	i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.05
done
is "$(json_get receiving)" true "GET /v1/receive says a receive runs"
ta=$(date +%s.%N)
req "$(tok w)" PUT /v1/receive/bk/busy -T "$T/stream"
tb=$(date +%s.%N)
is "$status" 409 "a second receive into the busy dataset gets 409"
like "$(awk -v a="$ta" -v b="$tb" 'BEGIN { print (b - a < 1) ? "at once" : b - a }')" '^at once$' \
	"at once, before its body is read"
req "$(tok w)" PUT /v1/receive/bk/busy/below -T "$T/stream"
is "$status" 409 "a receive below the busy dataset gets 409"
req "$(tok w)" DELETE /v1/receive/bk/busy
is "$status" 409 "an abort there gets 409"
req "$(tok w)" PUT /v1/receive/bk/free -T "$T/stream"
is "$status" 200 "meanwhile another dataset takes a receive"

# SIGTERM during it: a clean stop, the partial state kept
serve_stop
is "$serve_rc" 0 "SIGTERM during an upload: the server stops with status 0"
like "$(ferry get -H -o value receive_resume_token bk/busy)" '^1-' \
	"the interrupted receive kept its partial state"
like "$(grep 'PUT /v1/receive/bk/busy ' "$SERVE_LOG" | tail -1)" 'the server is stopping' \
	"the log says why the receive ended"
serve_start --timeout 2 --listen "127.0.0.1:${URL##*:}" bk
wait "$SLOW"
is "$?" 0 "the client, retrying, completes once the server is back"
like "$(grep '^resuming tank/fs@a after record [1-9]' "$T/slow.err")" . "by resuming the partial receive"
is "$(ferry get -H -o value receive_resume_token bk/busy)" - "which is then gone"

# a stalled client: the idle timeout cuts it off, its partial state stays
cat >"$T/stall.py" <<'EOF'
import socket, sys, time
port, tok, stream = int(sys.argv[1]), sys.argv[2], open(sys.argv[3], "rb").read()
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"PUT /v1/receive/bk/stall HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok.encode() +
          b"\r\nTransfer-Encoding: chunked\r\n\r\n")
part = stream[: len(stream) // 2]
s.sendall(b"%x\r\n" % len(part) + part + b"\r\n")
time.sleep(float(sys.argv[4]))
try:
    s.sendall(b"%x\r\n" % 10 + stream[len(part):len(part) + 10] + b"\r\n")
    print(s.recv(100))
except OSError as e:
    print("cut off:", e)
EOF
"$PYTHON" "$T/stall.py" "${URL##*:}" "$(tok w)" "$T/stream" 4 >"$T/stall.out" 2>&1 &
STALL=$!
sleep 0.5
i=0
until req "$(tok w)" GET /v1/receive/bk/stall && [ "$(json_get receiving)" = false ] &&
	[ "$(json_get receive_resume_token)" != null ]; do
	i=$((i + 1)); [ $i -gt 100 ] && break; sleep 0.1
done
like "$(json_get receive_resume_token)" '^1-' "a stalled upload is cut off and its partial state kept"
like "$(grep 'PUT /v1/receive/bk/stall ' "$SERVE_LOG.new" | tail -1)" 'idle timeout' \
	"after the idle timeout, the log says"
wait "$STALL"
run "$FERRY" send -v tank/fs@a --to "$URL/bk/stall"
is "$rc" 0 "the stalled receive is completed later"
like "$(grep '^resuming' "$T/err")" '^resuming tank/fs@a after record [1-9]' "by resuming it"

# memory: a 60 times larger body does not grow the server
h_small=$(hwm)
run "$FERRY" send tank/big@a --to "$URL/bk/big"
is "$rc" 0 "a 40 MB upload"
h_big=$(hwm)
diag "server peak RSS: ${h_small} KiB after small uploads, ${h_big} KiB after the big one"
if asan_build; then
	ok "# SKIP the server's RSS under AddressSanitizer is its quarantine's"
else
	like "$(( h_big < h_small + 40960 ))" '^1$' "the server's peak memory grew by less than 40 MiB for a 40 MB body"
fi
# a download whose client stops reading is cut off the same way
cat >"$T/slowread.py" <<'EOF'
import socket, sys, time
port, tok = int(sys.argv[1]), sys.argv[2]
s = socket.create_connection(("127.0.0.1", port))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET /v1/send/bk/big@a HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + tok.encode() + b"\r\n\r\n")
print(len(s.recv(1000)))
time.sleep(float(sys.argv[3]))
EOF
"$PYTHON" "$T/slowread.py" "${URL##*:}" "$(tok w)" 5 >"$T/slowread.out" 2>&1 &
SLOWREAD=$!
i=0
until grep -q 'GET /v1/send/bk/big@a .*idle timeout' "$SERVE_LOG.new" || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
like "$(grep 'GET /v1/send/bk/big@a ' "$SERVE_LOG.new" | tail -1)" 'no byte moved for the idle timeout' \
	"a download whose client stops reading is cut off after the idle timeout"
req "$(tok w)" GET /v1/pools
is "$status" 200 "and the server goes on"
wait "$SLOWREAD"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"

ferry pool create ctl "$T/ctl"
ferry create ctl/c
for i in 1 2 3 4 5 6 7 8; do ferry recv "ctl/c/$i" <"$T/stream"; done
for d in busy free stall; do ferry recv "ctl/$d" <"$T/stream"; done
ferry send tank/big@a | ferry recv ctl/big
after_check bk ctl "8 at once, a busy dataset, SIGTERM, a stalled client, a big body"
done_testing
