"""Runs the built rdma-healthd as a real process and talks to it over HTTP on 127.0.0.1 only."""

import os
import re
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REAL_FIXTURES = os.environ.get("RDMAHD_REAL_FIXTURES") or os.path.join(SOURCE_DIR, "..", "shared", "fixtures", "real")


def binary():
    path = os.environ.get("RDMAHD_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("RDMAHD_BINARY must name the built rdma-healthd (ctest sets it)")
    return path


class Daemon:
    """rdma-healthd on an ephemeral loopback port; the port is read from its 'listening' log line.
    A thread drains stderr into log_lines so the daemon never blocks on a full pipe."""

    def __init__(self, *args, env=None, wait_ready=True):
        self.args = [binary(), "--web.listen-address=127.0.0.1:0", "--log.format=text", *args]
        self.env = dict(os.environ, **(env or {}))
        self.env.pop("JOURNAL_STREAM", None)
        self.wait_ready = wait_ready
        self.proc = None
        self.port = None
        self.log_lines = []
        self._cv = threading.Condition()
        self._reader = None

    def _drain(self):
        for line in self.proc.stderr:
            with self._cv:
                self.log_lines.append(line.rstrip("\n"))
                self._cv.notify_all()
        with self._cv:
            self._cv.notify_all()

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     text=True, env=self.env)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()
        line = self.wait_for_log(r"msg=listening .*\bport=(\d+)", timeout=20, start=0)
        if line is None:
            self.stop()
            raise RuntimeError("daemon did not start:\n" + "\n".join(self.log_lines))
        self.port = int(re.search(r"\bport=(\d+)", line).group(1))
        # The daemon listens before its first collection and says ready (/-/ready 200) after it.
        if self.wait_ready and not self._wait_ready(timeout=20):
            self.stop()
            raise RuntimeError("daemon never became ready:\n" + "\n".join(self.log_lines))
        return self

    def _wait_ready(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/-/ready", timeout=5) as r:
                    if r.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.05)
        return False

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._reader:
            self._reader.join(timeout=5)

    def signal(self, sig):
        self._mark = len(self.log_lines)
        self.proc.send_signal(sig)

    def wait_for_log(self, pattern, timeout=10, start=None):
        """The first log line from `start` on (default: since the last signal) matching pattern."""
        i = getattr(self, "_mark", 0) if start is None else start
        deadline = time.monotonic() + timeout
        with self._cv:
            while True:
                while i < len(self.log_lines):
                    if re.search(pattern, self.log_lines[i]):
                        return self.log_lines[i]
                    i += 1
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    return None
                self._cv.wait(min(left, 0.2))

    def get(self, path):
        """(status, content_type, body) of GET http://127.0.0.1:PORT/path."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.headers.get("Content-Type"), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read().decode()


# Values that change from run to run; golden comparisons mask them.
# The held-file figures depend on the runner's RLIMIT_NOFILE.
VOLATILE = re.compile(r'^(rdma_healthd_collector_duration_seconds|'
                      r'rdma_healthd_config_last_reload_success_timestamp_seconds|'
                      r'rdma_healthd_held_files|rdma_healthd_held_files_budget|'
                      r'rdma_healthd_unheld_reads_total|'
                      r'rdma_kernel_event_last_seen_timestamp_seconds)(\{.*\})? ')


def mask(exposition):
    out = []
    for line in exposition.splitlines():
        m = VOLATILE.match(line)
        out.append(m.group(0) + "<masked>" if m else line)
    return "\n".join(out) + "\n"


def families(exposition):
    """Metric family names declared by # TYPE lines."""
    return {l.split()[2] for l in exposition.splitlines() if l.startswith("# TYPE ")}


def run(*args, timeout=60):
    return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=timeout)


def promtool_check(text):
    """Runs `promtool check metrics`; returns (ok, output). Lint warnings are failures too."""
    p = subprocess.run(["promtool", "check", "metrics"], input=text, capture_output=True, text=True, timeout=60)
    return p.returncode == 0 and not p.stdout.strip() and not p.stderr.strip(), p.stdout + p.stderr


class ScriptedDnsServer:
    """A DNS server on 127.0.0.1 (UDP and TCP on one ephemeral port) answering what `answer(name,
    qtype)` returns: a list of (owner, type, data) records, type "A", "AAAA" or "CNAME"; or None for
    no answer at all (a silent server). Over UDP an answer of more than 512 bytes is sent truncated
    (TC set), as a server without EDNS sends it, so resolvers ask again over TCP. `queries` lists
    (name, type, "udp" or "tcp") as they came."""

    TYPES = {"A": 1, "CNAME": 5, "AAAA": 28}

    def __init__(self, answer):
        import socket
        self.answer = answer
        self.queries = []
        self._lock = threading.Lock()
        for _ in range(20):
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            udp.bind(("127.0.0.1", 0))
            port = udp.getsockname()[1]
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                tcp.bind(("127.0.0.1", port))
            except OSError:
                udp.close()
                tcp.close()
                continue
            tcp.listen(16)
            udp.settimeout(0.2)  # so that the serving threads see close() within 0.2 s
            tcp.settimeout(0.2)
            self.udp, self.tcp, self.port = udp, tcp, port
            break
        else:
            raise RuntimeError("no free port for both UDP and TCP on 127.0.0.1")
        self.address = f"127.0.0.1:{self.port}"
        self._stop = False
        self._threads = [threading.Thread(target=self._serve_udp, daemon=True),
                         threading.Thread(target=self._serve_tcp, daemon=True)]
        for t in self._threads:
            t.start()

    def close(self):
        self._stop = True
        for t in self._threads:
            t.join(timeout=5)
        self.udp.close()
        self.tcp.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def count(self, name, qtype="A"):
        with self._lock:
            return sum(1 for n, t, _ in self.queries if n == name and t == qtype)

    @staticmethod
    def _encode(name):
        out = b""
        for label in name.strip(".").split("."):
            if label:
                out += bytes([len(label)]) + label.encode()
        return out + b"\0"

    def _respond(self, query, limit, transport):
        import socket
        import struct
        if len(query) < 12:
            return None
        labels, at = [], 12
        while at < len(query) and query[at] != 0:
            n = query[at]
            labels.append(query[at + 1:at + 1 + n].decode("ascii", "replace"))
            at += 1 + n
        if at + 5 > len(query):
            return None
        name = ".".join(labels)
        qtype_code = struct.unpack("!H", query[at + 1:at + 3])[0]
        qtype = {v: k for k, v in self.TYPES.items()}.get(qtype_code, str(qtype_code))
        with self._lock:
            self.queries.append((name, qtype, transport))
        records = self.answer(name, qtype)
        if records is None:
            return None
        question = query[12:at + 5]
        body = b""
        for owner, rtype, data in records:
            owner_bytes = b"\xc0\x0c" if owner.lower() == name.lower() else self._encode(owner)
            if rtype == "A":
                rdata = socket.inet_pton(socket.AF_INET, data)
            elif rtype == "AAAA":
                rdata = socket.inet_pton(socket.AF_INET6, data)
            else:
                rdata = self._encode(data)
            body += owner_bytes + struct.pack("!HHIH", self.TYPES[rtype], 1, 60, len(rdata)) + rdata
        truncated = 12 + len(question) + len(body) > limit
        flags = 0x8400 | (0x0200 if truncated else 0) | (0x0100 if query[2] & 1 else 0) | 0x0080
        header = query[:2] + struct.pack("!HHHHH", flags, 1, 0 if truncated else len(records), 0, 0)
        return header + question + (b"" if truncated else body)

    def _serve_udp(self):
        while not self._stop:
            try:
                query, peer = self.udp.recvfrom(1500)
            except TimeoutError:
                continue
            except OSError:
                return
            reply = self._respond(query, 512, "udp")
            if reply is not None:
                try:
                    self.udp.sendto(reply, peer)
                except OSError:
                    pass

    def _serve_tcp(self):
        while not self._stop:
            try:
                conn, _ = self.tcp.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve_conn, args=(conn,), daemon=True).start()

    def _serve_conn(self, conn):
        import struct

        def read(n):
            data = b""
            while len(data) < n:
                chunk = conn.recv(n - len(data))
                if not chunk:
                    return None
                data += chunk
            return data

        with conn:
            conn.settimeout(10)
            try:
                while True:
                    head = read(2)
                    if head is None:
                        return
                    query = read(struct.unpack("!H", head)[0])
                    if query is None:
                        return
                    reply = self._respond(query, 65535, "tcp")
                    if reply is not None:
                        conn.sendall(struct.pack("!H", len(reply)) + reply)
            except OSError:
                return
