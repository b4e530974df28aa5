#!/bin/sh
# 1,000 malformed requests (docs/ferry-http.7, CONVENTIONS and LIMITS):
# random methods, paths with %2e%2e, //, NUL and bad escapes, overlong
# request lines, headers and parameters, bad Content-Length, truncated
# chunked bodies, garbage and damaged streams, half requests, with and
# without a valid token, over raw sockets. The server stays up, answers
# each with a status the page lists (never 500, a JSON body for its own
# refusals), and every pool is exactly as before: no snapshot, no partial
# receive, no dataset. Then a normal backup still works.
. "$(dirname "$0")/lib.sh"
. "$FERRY_SRC/tests/cli/http.sh"
S=$T/src
mkdir -p "$S"
for i in 1 2 3 4; do "$FERRY_TOOLS/prng" text $i 150000 >"$S/f$i"; done
ferry pool create tank "$T/tank"
ferry create -o source="$S" -o recordsize=16K tank/fs
ferry snapshot tank/fs@a
ferry send tank/fs@a >"$T/stream"
ferry pool create -o compression=gzip-7 bk "$T/bk"
ferry create bk/h
ferry send tank/fs@a | ferry recv bk/h/have
ferry pool create other "$T/other"
ferry create other/x
token w bk write
token r bk/h read
serve_start --timeout 2 bk other
before=$(pool_state bk other)
cat >"$T/mal.py" <<'EOF'
# mal.py PORT TOKEN_W TOKEN_R STREAM N SEED: N malformed requests; prints
# one line per request: the status (or "-" when the server closed without
# one), the kind of request, and "json" when the body is one line of JSON
import random, socket, sys, time
port, tw, tr, stream, n, seed = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
rnd = random.Random(seed)
good = open(stream, "rb").read()
def junk(k):
    return bytes(rnd.randrange(256) for _ in range(k))
methods = [b"GET", b"PUT", b"DELETE", b"POST", b"HEAD", b"OPTIONS", b"PATCH", b"get", b"G\x00T",
           b"CONNECT", b"X" * 300, b"", b"TRACE"]
paths = [b"/v1/datasets/bk/h", b"/v1/datasets/bk/%2e%2e/other", b"/v1/datasets/bk/h/%2E%2E",
         b"/v1/datasets/bk//h", b"/v1/datasets//bk", b"/v1/datasets/bk/h/", b"/v1/datasets/bk/a%00b",
         b"/v1/datasets/bk/a%zz", b"/v1/datasets/bk/a%", b"/v1/receive/bk/h/new", b"/v1/receive/bk/h/../x",
         b"/v1/send/bk/h/have@a", b"/v1/send/bk/h/have", b"/v1/send/bk/h/have@a@b", b"/v1/snapshots/bk/h/have@nosuch", b"/v1/snapshots/bk/h/have@a@b",
         b"/v1/snapshots/bk/h/have", b"/v1/pools", b"/v1/pools/", b"/v2/pools", b"/", b"", b"*",
         b"/v1/datasets/" + b"a" * 300, b"/v1/datasets/bk/" + b"%41" * 400, b"/v1/datasets/bk/\xff\xfe",
         b"/v1/receive/bk/h/x#y", b"/v1/datasets/bk/h%23m", b"/v1/datasets/bk/h@", b"/v1/datasets/bk/h@.",
         b"/v1/datasets/.", b"/v1/datasets/bk/h?depth=1&depth=2", b"/v1/datasets/bk/h?depth=abc",
         b"/v1/datasets/bk/h?depth=-2", b"/v1/datasets/bk/h?types=", b"/v1/datasets/bk/h?types=snapshot,",
         b"/v1/datasets/bk/h?nosuch=1", b"/v1/datasets/bk/h?depth", b"/v1/datasets/bk/h?&&&=&",
         b"/v1/send/bk/h/have@a?token=garbage", b"/v1/send/bk/h/have@a?from=%23nosuch",
         b"/v1/send/bk/h/have@a?compress=gzip-12", b"/v1/send/bk/h/have@a?compressed=2",
         b"/v1/send/bk/h/have@a?intermediate=1", b"/v1/send/bk/h/have@a?token=1-00&from=x",
         b"/v1/receive/bk/h/have?force=yes", b"/v1/datasets/bk/h?" + b"&".join(b"a%d=1" % i for i in range(40)),
         b"/v1/datasets/bk/h?depth=" + b"9" * 2000, b"/v1/datasets/" + b"x/" * 5000, b"/v1/datasets/" + b"y" * 70000,
         b"/v1/datasets/other/x", b"/v1/receive/other/x/y", b"/v1/datasets/nosuchpool"]
def request(i):
    kind = rnd.randrange(12)
    tok = rnd.choice([tw, tw, tr, "", "ferry_" + "0" * 64, "garbage"])
    m = rnd.choice(methods) if rnd.random() < 0.5 else rnd.choice([b"GET", b"PUT", b"DELETE"])
    p = rnd.choice(paths)
    if rnd.random() < 0.2:
        p = bytearray(p)
        for _ in range(rnd.randrange(1, 4)):
            if p:
                p[rnd.randrange(len(p))] = rnd.randrange(256)
        p = bytes(p)
    hdr = [m + b" " + p + b" HTTP/1.1", b"Host: 127.0.0.1"]
    if tok:
        hdr.append(b"Authorization: Bearer " + tok.encode())
    body = b""
    name = "plain"
    if kind == 0:
        name = "overlong header"
        hdr.append(b"X-Long: " + b"a" * rnd.choice([9000, 20000, 70000]))
    elif kind == 1:
        name = "many headers"
        hdr += [b"X-%d: %d" % (j, j) for j in range(rnd.choice([50, 500, 3000]))]
    elif kind == 2:
        name = "bad content-length"
        hdr.append(b"Content-Length: " + rnd.choice([b"-1", b"abc", b"99999999999999999999", b"10", b"1 2"]))
        body = b"0123"
    elif kind == 3:
        name = "truncated chunked"
        hdr.append(b"Transfer-Encoding: chunked")
        body = rnd.choice([b"ffff\r\nabc", b"zz\r\n", b"5\r\nabc", b"10\r\n" + good[:16] + b"\r\n7fffffffffffffff\r\n",
                           b"\r\n\r\n", b"-1\r\n"])
    elif kind == 4:
        name = "garbage stream"
        p = b"/v1/receive/bk/h/g%d" % rnd.randrange(5)
        hdr[0] = b"PUT " + p + b" HTTP/1.1"
        hdr.append(b"Transfer-Encoding: chunked")
        data = junk(rnd.randrange(1, 3000))
        body = b"%x\r\n" % len(data) + data + b"\r\n0\r\n\r\n"
    elif kind == 5:
        name = "damaged stream"
        p = b"/v1/receive/bk/h/d%d" % rnd.randrange(5)
        hdr[0] = b"PUT " + p + b" HTTP/1.1"
        data = bytearray(good[:rnd.randrange(8, 200)])
        data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        hdr.append(b"Content-Length: %d" % len(data))
        body = bytes(data)
    elif kind == 6:
        name = "half request"
        hdr = [hdr[0][: rnd.randrange(len(hdr[0]) + 1)]]
    elif kind == 7:
        name = "body on GET"
        hdr[0] = b"GET /v1/datasets/bk/h HTTP/1.1"
        hdr.append(b"Content-Length: 5")
        body = b"hello"
    elif kind == 8:
        name = "bad header line"
        hdr.append(rnd.choice([b"NoColon", b": empty", b"\x00\x01: x", b"A:\r b", b" folded"]))
    elif kind == 9:
        name = "raw junk"
        hdr = [junk(rnd.randrange(1, 600)).replace(b"\r\n", b"")]
    elif kind == 10:
        name = "http/1.0"
        hdr[0] = hdr[0].replace(b"HTTP/1.1", rnd.choice([b"HTTP/1.0", b"HTTP/2.0", b"HTTP/x", b""]))
    raw = b"\r\n".join(hdr) + (b"\r\n\r\n" if kind != 6 else b"") + body
    s = socket.create_connection(("127.0.0.1", int(port)))
    s.settimeout(3)
    try:
        s.sendall(raw)
        if kind in (3, 6):
            time.sleep(0.01)
            s.shutdown(socket.SHUT_WR)
        got = b""
        while b"\r\n\r\n" not in got and len(got) < 200000:
            d = s.recv(65536)
            if not d:
                break
            got += d
        # the body, when the answer says how long it is
        head, _, rest = got.partition(b"\r\n\r\n")
        cl = [l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")]
        if cl:
            want = int(cl[0].split(b":")[1])
            while len(rest) < want:
                d = s.recv(65536)
                if not d:
                    break
                rest += d
    except (OSError, socket.timeout):
        got, head, rest = b"", b"", b""
    s.close()
    st = head.split(b" ")[1].decode() if head.startswith(b"HTTP/1.") and len(head.split(b" ")) > 1 else "-"
    js = "json" if rest.startswith(b'{"status": ') and rest.count(b"\n") == 1 and rest.endswith(b"}\n") else "-"
    if m == b"HEAD" and hdr[0].startswith(b"HEAD "):
        js = "head"  # an answer to HEAD has no body
    ct = "ct" if b"\r\ncontent-type: application/json" in head.lower() else "-"
    print(st, name.replace(" ", "_"), js, ct, flush=True)
for i in range(n):
    request(i)
EOF
SEED=${HTTP_MAL_SEED:-$(date +%s)}
diag "requests from seed $SEED (HTTP_MAL_SEED=$SEED reproduces them)"
"$PYTHON" "$T/mal.py" "$PORT" "$(tok w)" "$(tok r)" "$T/stream" 1000 "$SEED" >"$T/mal.out" 2>"$T/mal.err"
is "$(wc -l <"$T/mal.out")" 1000 "1,000 malformed requests were sent"
[ -s "$T/mal.err" ] && diag "$(tail -3 "$T/mal.err")"
ok_alive=0
serve_alive && ok_alive=1
is "$ok_alive" 1 "the server is still up"
is "$(awk '$1 !~ /^(-|200|400|401|403|404|405|409|413|414|431|503|505)$/' "$T/mal.out" | sort | uniq -c)" "" \
	"every answer has a status the protocol lists (no 500)"
# libmicrohttpd answers what is not HTTP (400, 413, 414, 431, 505) with
# its own HTML; every answer of ferry's has a one-line JSON body
is "$(awk '(($4 == "ct" && $1 >= 400) || $1 ~ /^(401|403|404|405|409|503)$/) && $3 == "-"' "$T/mal.out" | sort | uniq -c)" "" \
	"every refusal of ferry's own is a one-line JSON body"
like "$(awk '$4 == "ct" && $1 == 400' "$T/mal.out" | wc -l)" '^[1-9]' "ferry refused some as malformed itself"
diag "statuses: $(awk '{print $1}' "$T/mal.out" | sort | uniq -c | tr '\n' ' ')"
like "$(awk '$1 == 401' "$T/mal.out" | wc -l)" '^[1-9]' "some were refused for their token"
like "$(awk '$1 == 400' "$T/mal.out" | wc -l)" '^[1-9]' "some as malformed"
like "$(awk '$1 == 413 || $1 == 431 || $1 == 414' "$T/mal.out" | wc -l)" '^[1-9]' "some as too long"
# the receives the server may still be finishing
i=0
while grep -q '"receiving":true' "$T/body" 2>/dev/null || [ $i = 0 ]; do
	req "$(tok w)" GET /v1/receive/bk/h/g0
	i=$((i + 1))
	[ $i -gt 50 ] && break
	sleep 0.1
done
is "$(pool_state bk other)" "$before" "every pool is unchanged: no dataset, snapshot or partial receive"
req "$(tok w)" GET /v1/pools
is "$status" 200 "a normal request is answered"
run "$FERRY" send tank/fs@a --to "$URL/bk/h/after" --token-file "$T/tok.w"
is "$rc" 0 "and a normal backup works"
serve_stop
is "$serve_rc" 0 "the server stops cleanly"
ferry pool create -o compression=gzip-7 ctl "$T/ctl"
ferry create ctl/h
ferry send tank/fs@a | ferry recv ctl/h/have
ferry send tank/fs@a | ferry recv ctl/h/after
after_check bk ctl "1,000 malformed requests, then a backup"
done_testing
