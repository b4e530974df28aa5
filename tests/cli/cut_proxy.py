# tests/cli/cut_proxy.py PORTFILE LOG UPSERVER UP_CUTS DOWN_CUTS: forwards 127.0.0.1:* to
# 127.0.0.1:UPSERVER. The Nth upload (a PUT) is cut after UP_CUTS[N]
# client->server bytes of its request, the Nth download (GET /v1/send/)
# after DOWN_CUTS[N] server->client bytes of its answer; other requests
# pass. Requests are told apart by the first bytes of a client write (a
# client writes each request's head at once), so a reused connection is
# followed too. One log line per request: kind, bytes up, bytes down, cut
# or whole.
import socket, sys, threading
import proxy_lib
portfile, logf, upport = sys.argv[1], sys.argv[2], int(sys.argv[3])
cuts = {"put": [int(x) for x in sys.argv[4].split(",") if x],
        "send": [int(x) for x in sys.argv[5].split(",") if x]}
lock = threading.Lock()
ls = proxy_lib.listen(portfile)

def log(st):
    if st["kind"]:
        with open(logf, "a") as f:
            f.write("%s %d %d %s\n" % (st["kind"], st["up"], st["down"], "cut" if st["cut"] else "whole"))
    st["kind"] = None

def serve(c):
    s = socket.create_connection(("127.0.0.1", upport))
    st = {"kind": None, "up": 0, "down": 0, "cut": False, "limit": None}
    done = threading.Event()
    def kill():
        st["cut"] = True
        for x in (c, s):
            try:
                x.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
                x.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        done.set()
    def pump(src, dst, key):
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                with lock:
                    if key == "up" and data[:4] in (b"PUT ", b"GET ", b"DELE"):
                        log(st)
                        k = "put" if data.startswith(b"PUT ") else \
                            "send" if data.startswith(b"GET /v1/send/") else "other"
                        st.update(kind=k, up=0, down=0, cut=False,
                                  limit=cuts[k].pop(0) if k in cuts and cuts[k] else None)
                    lim, kind = st["limit"], st["kind"]
                    if lim is not None and key == ("up" if kind == "put" else "down"):
                        room = lim - st[key]
                        if len(data) >= room:
                            dst.sendall(data[:room])
                            st[key] += room
                            kill()
                            log(st)
                            return
                    st[key] += len(data)
                dst.sendall(data)
        except OSError:
            pass
        done.set()
    t1 = threading.Thread(target=pump, args=(c, s, "up"), daemon=True)
    t2 = threading.Thread(target=pump, args=(s, c, "down"), daemon=True)
    t1.start()
    t2.start()
    done.wait()
    proxy_lib.shut(c, s)
    t1.join(30)
    t2.join(30)
    with lock:
        log(st)
    for x in (c, s):
        x.close()

proxy_lib.serve_forever(ls, serve)
