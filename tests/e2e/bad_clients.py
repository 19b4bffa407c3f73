"""Bad HTTP clients held against a server on 127.0.0.1: idle connections, slowloris clients (a
header never finished, one byte now and then) and slow readers (a /metrics response asked for and
never read). Used by http_e2e_test.py and by bench/http_load.py."""

import socket
import threading
import time


class BadClients:
    """Holds the bad clients from __enter__ until __exit__.

    An OSError while opening them propagates, unless collect_errors is set: then it is recorded in
    `errors` and the clients opened so far are held. `settle`: seconds to wait after opening them."""

    def __init__(self, port, idle, slowloris, slow_readers, *, collect_errors=False, settle=0.3):
        self.port, self.counts = port, (idle, slowloris, slow_readers)
        self.collect_errors, self.settle = collect_errors, settle
        self.socks, self.errors = [], []
        self._lorises, self._stop = [], threading.Event()
        self._trickler = None

    def _connect(self, rcvbuf=None):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        s.settimeout(5)
        s.connect(("127.0.0.1", self.port))
        self.socks.append(s)
        return s

    def _open(self):
        idle, slowloris, slow_readers = self.counts
        for _ in range(idle):
            self._connect()
        for _ in range(slowloris):
            s = self._connect()
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
            self._lorises.append(s)
        for _ in range(slow_readers):
            s = self._connect(rcvbuf=4096)
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.recv(1)  # the response has started; the rest stays unread

    def __enter__(self):
        try:
            self._open()
        except OSError as e:
            if not self.collect_errors:
                raise
            self.errors.append(f"could only open {len(self.socks)} of {sum(self.counts)} connections: {e}")

        def trickle():
            while not self._stop.wait(1.0):
                for s in self._lorises:
                    try:
                        s.send(b"a")
                    except OSError:
                        pass
        self._trickler = threading.Thread(target=trickle, daemon=True)
        self._trickler.start()
        time.sleep(self.settle)
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._trickler:
            self._trickler.join(timeout=5)
        for s in self.socks:
            s.close()
