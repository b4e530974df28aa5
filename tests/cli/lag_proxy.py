# tests/cli/lag_proxy.py PORTFILE LOG UPSERVER CUT WAIT: forwards 127.0.0.1:*
# to 127.0.0.1:UPSERVER, except the first upload (a PUT): its first CUT
# bytes are held and the client's connection is reset; those bytes reach
# the server only once the client's next GET /v1/receive/ has been
# answered, and the server's connection is reset once the server runs
# that receive. Every later PUT
# waits until the server says (GET /v1/receive/DATASET, with the token in
# FERRY_TOKEN) that it took that receive up: it runs, or it left a
# partial receive; at most WAIT seconds. Other requests pass at once. So
# the client, asking where the server stands right after the cut, is
# always answered before the server has begun that receive, and its next
# upload arrives once the server has taken it up: the order that made a
# resumed upload meet a 409. Requests are told apart by the first bytes
# of a client write, so a reused connection is followed too. One log line
# per event.
import http.client, json, os, socket, sys, threading, time
import proxy_lib
portfile, logf, upport = sys.argv[1], sys.argv[2], int(sys.argv[3])
cut, wait = int(sys.argv[4]), float(sys.argv[5])
lock = threading.Lock()
gate = threading.Event()
gate.set()
asked = threading.Event()  # a GET /v1/receive/ answered after the reset
state = {"first": True, "reset": False}
ls = proxy_lib.listen(portfile)


def log(msg):
    with lock:
        with open(logf, "a") as f:
            f.write(msg + "\n")


def reset(x):
    try:
        x.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\1\0\0\0\0\0\0\0")
        x.close()
    except OSError:
        pass


def taken_up(dataset):
    """True once the server runs a receive into dataset or holds one."""
    try:
        h = http.client.HTTPConnection("127.0.0.1", upport, timeout=5)
        h.request("GET", "/v1/receive/" + dataset,
                  headers={"Authorization": "Bearer " + os.environ["FERRY_TOKEN"]})
        r = h.getresponse()
        body = r.read()
        h.close()
        if r.status != 200:
            return False
        st = json.loads(body)
        return st.get("receiving") is True or bool(st.get("receive_resume_token"))
    except (OSError, ValueError):
        return False


def until_taken_up(dataset):
    """taken_up, asked every 50 ms for at most WAIT seconds."""
    end = time.monotonic() + wait
    while not taken_up(dataset):
        if time.monotonic() > end:
            return False
        time.sleep(0.05)
    return True


def lagged(c, s, held):
    """The first PUT: held, the client reset, the bytes sent late."""
    line = held.split(b" ", 2)[1].decode()
    dataset = line[len("/v1/receive/"):].split("?")[0].split("@")[0]
    while len(held) < cut:
        data = c.recv(65536)
        if not data:
            break
        held += data
    held = held[:cut]
    reset(c)
    with lock:
        state["reset"] = True
    log("put held %d, client reset" % len(held))
    asked.wait(60)
    log("the client was told where the server stands")
    try:
        s.sendall(held)
    except OSError:
        pass
    # the server's connection is reset once the server runs that receive
    # (a fixed 0.2 s could pass on a loaded machine before it had read the
    # request: then no receive was cut and the next upload met no 409)
    up = until_taken_up(dataset)
    reset(s)
    log("put forwarded late, server reset")
    if up or until_taken_up(dataset):
        log("the server took up the cut receive")
    else:
        log("the server did not take up the cut receive in %g s" % wait)
    gate.set()


def serve(c):
    s = socket.create_connection(("127.0.0.1", upport))
    done = threading.Event()
    watch = [False]  # this connection carries the GET asked after the reset

    def up():
        try:
            while True:
                data = c.recv(65536)
                if not data:
                    break
                if data.startswith(b"GET /v1/receive/"):
                    with lock:
                        watch[0] = state["reset"]
                if data.startswith(b"PUT "):
                    with lock:
                        first, state["first"] = state["first"], False
                        if first:
                            gate.clear()
                    if first:
                        lagged(c, s, data)
                        done.set()
                        return
                    log("put waits")
                    gate.wait()
                    log("put forwarded")
                s.sendall(data)
        except OSError:
            pass
        done.set()

    def down():
        try:
            while True:
                data = s.recv(65536)
                if not data:
                    break
                c.sendall(data)
                if watch[0]:
                    watch[0] = False
                    asked.set()
        except OSError:
            pass
        done.set()

    threading.Thread(target=up, daemon=True).start()
    threading.Thread(target=down, daemon=True).start()
    done.wait()
    proxy_lib.shut(c, s)


proxy_lib.serve_forever(ls, serve)
