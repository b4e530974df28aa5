# tests/cli/proxy_lib.py: what the test proxies (cut_proxy.py, lag_proxy.py)
# share: a listening socket on a port the kernel picks, told to the test
# through a file written whole (renamed into place), the accept loop, and
# the end of a proxied connection.
import os
import socket
import threading


def listen(portfile):
    """A socket listening on 127.0.0.1, its port written to portfile."""
    ls = socket.socket()
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", 0))
    ls.listen(64)
    with open(portfile + ".tmp", "w") as f:
        f.write(str(ls.getsockname()[1]))
    os.rename(portfile + ".tmp", portfile)
    return ls


def serve_forever(ls, serve):
    """serve(connection) on a thread of its own for each client."""
    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def shut(*socks):
    """Both directions of each socket shut, whatever state it is in."""
    for x in socks:
        try:
            x.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
