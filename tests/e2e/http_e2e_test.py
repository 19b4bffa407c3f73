"""End-to-end tests of the daemon's HTTP side: bad clients held while scrapes go on, listen
addresses, HTTP/1.0, Date, gzip, TLS (server and client certificates made with the openssl CLI)
and basic auth (a bcrypt hash made with htpasswd). Loopback only; every test bounded in seconds."""

import gzip
import http.client
import os
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.error
import urllib.request

from bad_clients import BadClients
from harness import SOURCE_DIR, Daemon, binary, run

FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs")
EMPTY_DCB = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")


def fixture_args():
    trees = sorted(d for d in os.listdir(FIXTURE) if os.path.isdir(os.path.join(FIXTURE, d)))
    return [f"--path.sysfs={os.path.join(FIXTURE, trees[0])}", f"--path.dcb={EMPTY_DCB}"]


def raise_nofile(want):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))


def timed_get(port, path, timeout=10):
    t0 = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        body = r.read()
        return r.status, time.monotonic() - t0, body


class HeldConnectionsTest(unittest.TestCase):
    # Bounds for a loaded CI machine; bench/http_load.py measures the 100 ms target at full scale.
    BOUND_S = 1.0

    def test_scrapes_answer_while_idle_slowloris_and_slow_readers_are_held(self):
        raise_nofile(4096)
        with Daemon(*fixture_args()) as d:
            # 210: under the 256 connections one client address may hold (1024 / 4), as the
            # scrapes come from the same 127.0.0.1.
            held = BadClients(d.port, idle=150, slowloris=50, slow_readers=10)
            try:
                held.__enter__()
            except OSError as e:
                held.__exit__(None, None, None)
                self.fail(f"the server stopped taking connections after {len(held.socks)}: {e}")
            try:  # not `with held`: that would open a second set of clients
                for path in ("/-/healthy", "/metrics", "/-/healthy", "/metrics"):
                    try:
                        status, took, _ = timed_get(d.port, path, timeout=5)
                    except (OSError, urllib.error.URLError) as e:
                        self.fail(f"{path}: no answer while bad clients are held: {e}")
                    self.assertEqual(status, 200, path)
                    self.assertLess(took, self.BOUND_S, f"{path} took {took:.3f}s")
                self.assertIsNone(d.proc.poll())
            finally:
                held.__exit__(None, None, None)


def has_ipv6_loopback():
    try:
        with socket.socket(socket.AF_INET6) as s:
            s.bind(("::1", 0))
        return True
    except OSError:
        return False


def healthy_within(port, seconds, host="127.0.0.1"):
    """Seconds until GET /-/healthy first answers 200, retrying refused or dropped connections;
    None when it does not within `seconds`."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        try:
            conn = http.client.HTTPConnection(host, port, timeout=max(0.1, seconds - (time.monotonic() - t0)))
            conn.request("GET", "/-/healthy")
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return time.monotonic() - t0
        except (OSError, http.client.HTTPException):
            time.sleep(0.02)
    return None


class HalfRequestsAndGreedyClientsTest(unittest.TestCase):
    """A burst of clients that send part of a request and close, and one client
    address holding more idle connections than there are slots."""
    COUNT = 1100  # more than the 1024 slots

    def test_burst_of_half_requests_then_fin_does_not_black_out_healthy(self):
        raise_nofile(4096)
        with Daemon(*fixture_args()) as d:
            t0 = time.monotonic()
            for _ in range(self.COUNT):
                s = socket.create_connection(("127.0.0.1", d.port), timeout=5)
                try:
                    s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
                except OSError:
                    pass  # closed at once by the per-client cap
                s.close()
            burst = time.monotonic() - t0
            took = healthy_within(d.port, 3.0)
            self.assertIsNotNone(took, f"/-/healthy did not answer within 3 s of a {burst:.2f} s burst")
            self.assertLess(took, 1.5, f"/-/healthy took {took:.2f} s after the burst")

    def test_one_client_with_many_idle_connections_cannot_take_every_slot(self):
        if not has_ipv6_loopback():
            self.skipTest("no IPv6 loopback")
        raise_nofile(4096)
        d = Daemon(*fixture_args())
        d.args[d.args.index("--web.listen-address=127.0.0.1:0")] = "--web.listen-address=:0"
        with d:
            held = []
            try:
                for _ in range(self.COUNT):  # from 127.0.0.1, never a byte
                    held.append(socket.create_connection(("127.0.0.1", d.port), timeout=5))
                time.sleep(0.3)
                took = healthy_within(d.port, 3.0, host="::1")
                self.assertIsNotNone(took, "/-/healthy from ::1: no answer while 127.0.0.1 holds 1,100 connections")
                self.assertLess(took, 1.0)
            finally:
                for s in held:
                    s.close()


def loopback_aliases(count):
    """127.0.0.2, ...: loopback addresses of their own, other clients as the server counts them."""
    return [f"127.0.0.{i}" for i in range(2, 2 + count)]


# Requests whose body never comes whole: a Content-Length not reached, a chunk cut mid-way.
CUT_BODIES = (
    b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n0123456789",
    b"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n64\r\n0123456789",
)


class CutBodiesTest(unittest.TestCase):
    """Issue 41 item 7: 1,100 requests whose body is cut short, then FIN, from 5 addresses
    (220 each: under the per-client cap) used to sit in CLOSE-WAIT for the 60 s idle timeout and
    black out /-/healthy and /metrics for everyone. Each must give its slot back at once."""
    PER_ADDRESS = 220

    def test_cut_bodies_then_fin_are_closed_at_once_and_scrapes_go_on(self):
        raise_nofile(4096)
        with Daemon(*fixture_args()) as d:
            socks = []
            try:
                for source in loopback_aliases(5):
                    for i in range(self.PER_ADDRESS):
                        s = socket.create_connection(("127.0.0.1", d.port), timeout=5, source_address=(source, 0))
                        socks.append(s)
                        s.sendall(CUT_BODIES[i % 2])
                        s.shutdown(socket.SHUT_WR)
                t0 = time.monotonic()
                took = healthy_within(d.port, 3.0)
                self.assertIsNotNone(took, "/-/healthy: no answer within 3 s of 1,100 cut bodies")
                self.assertLess(took, 1.5, f"/-/healthy took {took:.2f} s after the cut bodies")
                status, took, _ = timed_get(d.port, "/metrics", timeout=5)
                self.assertEqual(status, 200)
                self.assertLess(took, 2.0)
                # Every cut connection closed by the server (EOF on our side), well before 60 s.
                still_open = 0
                for s in socks:
                    s.settimeout(max(0.05, 3.0 - (time.monotonic() - t0)))
                    try:
                        while s.recv(4096):
                            pass
                    except socket.timeout:
                        still_open += 1
                    except OSError:
                        pass  # reset: closed too
                self.assertEqual(still_open, 0, f"{still_open} of {len(socks)} cut bodies still held 3 s after FIN")
            finally:
                for s in socks:
                    s.close()


class IdleFloodFromManyAddressesTest(unittest.TestCase):
    """Issue 41 item 8: 5 addresses x 220 idle connections (each address under its 256, together
    more than the 1,024 slots) used to keep every newcomer in the accept queue until the 10 s
    header deadline. The connection idle longest is shed for a newcomer instead."""

    def test_idle_flood_from_five_addresses_does_not_black_out_scrapes(self):
        raise_nofile(4096)
        with Daemon(*fixture_args()) as d:
            socks = []
            try:
                for source in loopback_aliases(5):
                    for _ in range(220):
                        socks.append(socket.create_connection(("127.0.0.1", d.port), timeout=5,
                                                              source_address=(source, 0)))
                time.sleep(0.3)
                took = healthy_within(d.port, 3.0)
                self.assertIsNotNone(took, "/-/healthy: no answer while 1,100 idle connections are held")
                self.assertLess(took, 1.0, f"/-/healthy took {took:.2f} s")
                status, took, _ = timed_get(d.port, "/metrics", timeout=5)
                self.assertEqual(status, 200)
                self.assertLess(took, 2.0)
            finally:
                for s in socks:
                    s.close()


def raw_exchange(port, request, timeout=3.0):
    """Sends `request` as is; (bytes read until the server closed or `timeout`, closed?)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(request)
        data, deadline = b"", time.monotonic() + timeout
        while time.monotonic() < deadline:
            s.settimeout(max(0.01, deadline - time.monotonic()))
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                return data, False
            if not chunk:
                return data, True
            data += chunk
        return data, False


class FramingAndHeadersTest(unittest.TestCase):
    """Issue 41 item 11: RFC 9112 framing, and the headers that keep a browser from sniffing,
    framing or storing what the daemon serves."""

    def test_ambiguous_framing_is_400_and_close(self):
        smuggled = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
        cases = {
            "two Content-Lengths": b"POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                   b"Content-Length: " + str(len(smuggled)).encode() + b"\r\n\r\n" + smuggled,
            "same Content-Length twice": b"POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                         b"Content-Length: 0\r\n\r\n" + smuggled,
            "space before the colon": b"POST /-/healthy HTTP/1.1\r\nHost: x\r\nTransfer-Encoding : chunked\r\n\r\n"
                                      + b"%x\r\n" % len(smuggled) + smuggled + b"\r\n0\r\n\r\n",
            "Content-Length and Transfer-Encoding": b"POST /-/healthy HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n"
                                                    b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n" + smuggled,
        }
        with Daemon(*fixture_args()) as d:
            for name, request in cases.items():
                with self.subTest(name):
                    t0 = time.monotonic()
                    data, closed = raw_exchange(d.port, request)
                    self.assertTrue(data.startswith(b"HTTP/1.1 400 "), data[:200])
                    self.assertTrue(closed and time.monotonic() - t0 < 1.5, "the connection was kept open")
                    self.assertEqual(data.count(b"HTTP/1.1 "), 1, f"a second (smuggled) answer: {data[:400]!r}")

    def test_page_and_api_forbid_sniffing_and_framing(self):
        with Daemon(*fixture_args()) as d:
            for path in ("/", "/api/v1/checks", "/api/v1/devices", "/metrics"):
                with self.subTest(path):
                    with urllib.request.urlopen(f"http://127.0.0.1:{d.port}{path}", timeout=10) as r:
                        headers, body = r.headers, r.read()
                    self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff")
                    csp = headers.get("Content-Security-Policy", "")
                    self.assertIn("frame-ancestors 'none'", csp)
                    if path == "/":
                        # The header is the page's own <meta> policy plus what only a header can say.
                        import re
                        meta = re.search(rb'<meta http-equiv="Content-Security-Policy" content="([^"]*)">', body)
                        self.assertIsNotNone(meta, "the page lost its <meta> CSP")
                        self.assertEqual(csp, meta.group(1).decode() + "; frame-ancestors 'none'")


class LowFdLimitTest(unittest.TestCase):
    """Out of descriptors is said at warn level, naming the limit."""

    def test_accept_failing_for_want_of_descriptors_is_a_warning_naming_the_limit(self):
        with tempfile.TemporaryDirectory() as empty:
            # The limit is lowered only once the daemon is ready and its threads have started:
            # UBSan's vptr check at a thread's start probes memory through a pipe, and with no
            # descriptor left it reports a false "invalid vptr" and kills the daemon. Started under
            # a low limit, the first collection's lane thread raced the HTTP server for descriptors.
            with Daemon(f"--path.sysfs={empty}", f"--path.procfs={empty}") as d:
                in_use = len(os.listdir(f"/proc/{d.proc.pid}/fd"))
                # Room for 2 connections, fewer than the 4 one client may hold, so accept runs out.
                limit = in_use + 2
                subprocess.run(["prlimit", f"--pid={d.proc.pid}", f"--nofile={limit}:{limit}"], check=True)
                held = []
                try:
                    for _ in range(10):
                        held.append(socket.create_connection(("127.0.0.1", d.port), timeout=5))
                    line = d.wait_for_log(r"out of file descriptors", timeout=5)
                finally:
                    for s in held:
                        s.close()
                self.assertIsNotNone(line, "\n".join(d.log_lines[-10:]))
                self.assertIn("level=warn", line)
                self.assertIn(f"open_file_limit={limit}", line)
                self.assertIsNone(d.proc.poll())

    def test_start_without_descriptors_names_the_limit(self):
        with tempfile.TemporaryDirectory() as empty:
            p = subprocess.run(["prlimit", "--nofile=8:8", binary(), "--web.listen-address=127.0.0.1:0",
                                f"--path.sysfs={empty}", f"--path.procfs={empty}"],
                               capture_output=True, text=True, timeout=20)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertIn("open-file limit is 8", p.stderr)


class ListenAndProtocolTest(unittest.TestCase):
    def test_invalid_ip_is_refused_naming_the_value(self):
        p = run("--web.listen-address=999.1.1.1:0", "--path.sysfs=/nonexistent", timeout=20)
        self.assertEqual(p.returncode, 1)
        self.assertIn("999.1.1.1", p.stderr)
        self.assertIn("is not an IPv4 address", p.stderr)

    def test_ipv6_and_dual_stack(self):
        if not socket.has_ipv6:
            self.skipTest("no IPv6")
        try:
            socket.socket(socket.AF_INET6).close()
        except OSError:
            self.skipTest("no IPv6 in this kernel")
        with tempfile.TemporaryDirectory() as empty:
            d = Daemon(f"--path.sysfs={empty}", wait_ready=False)
            d.args[d.args.index("--web.listen-address=127.0.0.1:0")] = "--web.listen-address=[::1]:0"
            with d:
                conn = http.client.HTTPConnection("::1", d.port, timeout=5)
                conn.request("GET", "/-/healthy")
                self.assertEqual(conn.getresponse().status, 200)
                conn.close()
            d = Daemon(f"--path.sysfs={empty}", wait_ready=False)
            d.args[d.args.index("--web.listen-address=127.0.0.1:0")] = "--web.listen-address=:0"
            with d:
                for host in ("127.0.0.1", "::1"):
                    conn = http.client.HTTPConnection(host, d.port, timeout=5)
                    conn.request("GET", "/-/healthy")
                    self.assertEqual(conn.getresponse().status, 200, host)
                    conn.close()

    def test_listener_is_open_before_the_first_collection(self):
        # The first collection logs what it found; the port must be held (and logged) before it.
        with tempfile.TemporaryDirectory() as empty:
            with Daemon(f"--path.sysfs={empty}", f"--path.procfs={empty}") as d:
                self.assertIsNotNone(d.wait_for_log("no RDMA device found", timeout=10, start=0))
                lines = list(d.log_lines)
        listening = next(i for i, l in enumerate(lines) if "msg=listening" in l)
        found = next(i for i, l in enumerate(lines) if "no RDMA device found" in l)
        self.assertLess(listening, found, "\n".join(lines))

    def test_http10_date_and_gzip(self):
        with Daemon(*fixture_args()) as d:
            with socket.create_connection(("127.0.0.1", d.port), timeout=5) as s:
                s.sendall(b"GET /metrics HTTP/1.0\r\n\r\n")
                raw = b""
                while chunk := s.recv(65536):  # HTTP/1.0: the server closes after the answer
                    raw += chunk
            head, _, body = raw.partition(b"\r\n\r\n")
            head = head.decode()
            self.assertRegex(head, r"^HTTP/1\.[01] 200 OK\r\n")
            self.assertRegex(head, r"\r\nDate: \w{3}, \d\d \w{3} \d{4} \d\d:\d\d:\d\d GMT")
            self.assertNotIn("chunked", head.lower())
            self.assertIn(b"rdma_healthd_build_info", body)

            req = urllib.request.Request(f"http://127.0.0.1:{d.port}/metrics", headers={"Accept-Encoding": "gzip"})
            with urllib.request.urlopen(req, timeout=10) as r:
                self.assertEqual(r.headers.get("Content-Encoding"), "gzip")
                self.assertIn("Accept-Encoding", r.headers.get("Vary", ""))
                text = gzip.decompress(r.read()).decode()
            self.assertIn("# TYPE rdma_healthd_build_info gauge", text)


def openssl(*args, cwd):
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True, timeout=60)


def make_pki(folder):
    """A CA, a server certificate for 127.0.0.1 signed by it, a client certificate signed by it and
    a self-signed client certificate nobody trusts."""
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=test ca", "-keyout", "ca.key", "-out", "ca.crt", cwd=folder)
    for name, ext in (("server", "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth"),
                      ("client", "extendedKeyUsage=clientAuth")):
        with open(os.path.join(folder, name + ".ext"), "w") as f:
            f.write(ext + "\n")
        openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-subj", f"/CN={name}",
                "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=folder)
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial",
                "-days", "2", "-extfile", f"{name}.ext", "-out", f"{name}.crt", cwd=folder)
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
            "-subj", "/CN=stranger", "-keyout", "stranger.key", "-out", "stranger.crt", cwd=folder)


def htpasswd(user, password):
    p = subprocess.run(["htpasswd", "-nbBC", "10", user, password], capture_output=True, text=True,
                       check=True, timeout=30)
    return p.stdout.strip().split(":", 1)[1]


class TlsAndAuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # A failure, not a skip: scripts/install-deps.sh test installs both.
        if not (shutil.which("openssl") and shutil.which("htpasswd")):
            raise RuntimeError("needs openssl and htpasswd (apache2-utils): scripts/install-deps.sh test")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name
        make_pki(cls.dir)
        cls.empty = os.path.join(cls.dir, "empty-sys")
        os.mkdir(cls.empty)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def web_config(self, text):
        path = os.path.join(self.dir, "web.yml")
        with open(path, "w") as f:
            f.write(text)
        return path

    def start(self, web_yml):
        d = Daemon(f"--path.sysfs={self.empty}", f"--web.config.file={web_yml}", wait_ready=False)
        d.__enter__()
        self.addCleanup(d.stop)
        return d

    def context(self, cert=None):
        ctx = ssl.create_default_context(cafile=os.path.join(self.dir, "ca.crt"))
        if cert:
            ctx.load_cert_chain(os.path.join(self.dir, cert + ".crt"), os.path.join(self.dir, cert + ".key"))
        return ctx

    def https(self, port, path="/-/healthy", cert=None, auth=None):
        """(status, headers) or raises."""
        conn = http.client.HTTPSConnection("127.0.0.1", port, context=self.context(cert), timeout=10)
        headers = {}
        if auth:
            import base64
            headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
        conn.request("GET", path, headers=headers)
        r = conn.getresponse()
        r.read()
        conn.close()
        return r.status, r.headers

    def refused(self, port, cert):
        """True when the server refuses a client with `cert`: at the handshake, by closing, or 403."""
        try:
            return self.https(port, cert=cert)[0] == 403
        except (OSError, http.client.HTTPException):
            return True

    def test_tls_with_relative_paths_and_no_plain_http(self):
        d = self.start(self.web_config("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"))
        status, _ = self.https(d.port)
        self.assertEqual(status, 200)
        with self.assertRaises((OSError, http.client.HTTPException)):
            conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=5)
            conn.request("GET", "/-/healthy")
            conn.getresponse()
        self.assertTrue(any("tls=on" in l for l in d.log_lines), d.log_lines)

    def test_client_certificate_required_and_verified(self):
        d = self.start(self.web_config(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"))
        self.assertEqual(self.https(d.port, cert="client")[0], 200)
        for cert in (None, "stranger"):
            self.assertTrue(self.refused(d.port, cert), cert)

    def test_client_certificate_verified_if_given(self):
        d = self.start(self.web_config(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_auth_type: VerifyClientCertIfGiven\n  client_ca_file: ca.crt\n"))
        self.assertEqual(self.https(d.port)[0], 200)
        self.assertEqual(self.https(d.port, cert="client")[0], 200)
        self.assertTrue(self.refused(d.port, "stranger"))

    def test_any_client_certificate_required(self):
        d = self.start(self.web_config(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            "  client_auth_type: RequireAnyClientCert\n"))
        self.assertEqual(self.https(d.port, cert="stranger")[0], 200)
        self.assertTrue(self.refused(d.port, None))

    def test_basic_auth_over_tls(self):
        d = self.start(self.web_config(
            "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
            f"basic_auth_users:\n  prom: {htpasswd('prom', 'right horse')}\n"))
        self.assertEqual(self.https(d.port, "/metrics", auth=("prom", "right horse"))[0], 200)
        for auth in (None, ("prom", "wrong"), ("nobody", "right horse")):
            status, headers = self.https(d.port, "/metrics", auth=auth)
            self.assertEqual(status, 401, auth)
            self.assertIn("Basic", headers.get("WWW-Authenticate", ""))
        # Cached after the first success: the check does not pay for bcrypt again.
        t0 = time.monotonic()
        for _ in range(5):
            self.assertEqual(self.https(d.port, "/-/healthy", auth=("prom", "right horse"))[0], 200)
        self.assertLess(time.monotonic() - t0, 2.0)
        # What is behind the password is never stored by a browser or a cache, ETag or not.
        for path in ("/api/v1/checks", "/", "/metrics"):
            status, headers = self.https(d.port, path, auth=("prom", "right horse"))
            self.assertEqual(status, 200, path)
            self.assertEqual(headers.get("Cache-Control"), "no-store", path)
            self.assertEqual(headers.get("X-Content-Type-Options"), "nosniff", path)

    def test_web_config_errors_stop_the_daemon(self):
        cases = [
            ("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n  cert_fiel: x\n",
             "web.yml:4:3: tls_server_config: unknown key \"cert_fiel\""),
            ("tls_server_config:\n  cert_file: missing.crt\n  key_file: server.key\n", "missing.crt"),
            ("basic_auth_users:\n  prom: plaintext\n", "web.yml:2:9: basic_auth_users: prom: not a bcrypt hash"),
            ("tls_srever_config: {}\n", "web.yml:1:1: unknown key \"tls_srever_config\""),
            ("tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n",
             "web.yml: cert_file " + os.path.join(self.dir, "server.crt") + " with key_file"),
        ]
        for text, want in cases:
            with self.subTest(want=want):
                path = self.web_config(text)
                p = run(f"--web.config.file={path}", "--web.listen-address=127.0.0.1:0",
                        f"--path.sysfs={self.empty}", timeout=20)
                self.assertIn(p.returncode, (1, 2), p.stderr)
                self.assertIn(want, p.stderr.replace('\\"', '"'))


def bcrypt_hash(user, password, cost):
    p = subprocess.run(["htpasswd", "-nbBC", str(cost), user, password], capture_output=True, text=True,
                       check=True, timeout=120)
    return p.stdout.strip().split(":", 1)[1]


class WrongPasswordFlood:
    """Clients, each from its own loopback address (127.0.0.2, ...), sending wrong passwords for
    /metrics one after the other on a keep-alive connection, until stopped or `seconds` pass.
    `answers` counts what they got, by status (or exception name)."""

    def __init__(self, port, clients, seconds=30):
        self.port = port
        self.sources = [f"127.0.0.{2 + i}" for i in range(clients)]
        self.deadline = time.monotonic() + seconds
        self.stopping = threading.Event()
        self.answers = {}
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._client, args=(s,), daemon=True) for s in self.sources]

    def _client(self, source):
        import base64
        header = {"Authorization": "Basic " + base64.b64encode(b"prom:wrong guess").decode()}
        conn = None
        while not self.stopping.is_set() and time.monotonic() < self.deadline:
            try:
                if conn is None:
                    conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10, source_address=(source, 0))
                conn.request("GET", "/metrics", headers=header)
                r = conn.getresponse()
                r.read()
                key = r.status
            except (OSError, http.client.HTTPException) as e:
                key = type(e).__name__
                if conn:
                    conn.close()
                conn = None
                time.sleep(0.02)
            with self.lock:
                self.answers[key] = self.answers.get(key, 0) + 1
        if conn:
            conn.close()

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=15)


class WrongPasswordFloodTest(unittest.TestCase):
    """Wrong passwords from many clients (bcrypt cost 12, as a careful operator
    might choose) must not slow the scrapes of a user whose password was verified before, and
    SIGTERM must not wait for a bcrypt; a cost past the bound is refused at start."""
    FLOODERS = 8

    @classmethod
    def setUpClass(cls):
        if not shutil.which("htpasswd"):
            raise RuntimeError("needs htpasswd (apache2-utils): scripts/install-deps.sh test")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = cls.tmp.name

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def web_config(self, name, hash_):
        path = os.path.join(self.dir, name)
        with open(path, "w") as f:
            f.write(f"basic_auth_users:\n  prom: {hash_}\n")
        return path

    def scrape(self, port, password="right horse", timeout=10):
        import base64
        t0 = time.monotonic()
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            conn.request("GET", "/metrics", headers={
                "Authorization": "Basic " + base64.b64encode(f"prom:{password}".encode()).decode()})
            r = conn.getresponse()
            body = r.read()
            return r.status, time.monotonic() - t0, body
        finally:
            conn.close()

    def start(self, web_yml, remember=True):
        """The daemon (basic auth guards /-/ready too, so readiness is asked with the password, which
        also has it verified and remembered before any flood)."""
        d = Daemon(*fixture_args(), f"--web.config.file={web_yml}", wait_ready=False)
        d.__enter__()
        self.addCleanup(d.stop)
        deadline = time.monotonic() + 30
        while remember and time.monotonic() < deadline:
            status, _, _ = self.scrape(d.port, timeout=30)
            if status == 200:
                break
            time.sleep(0.1)
        return d

    def test_remembered_user_scrapes_stay_fast_under_a_wrong_password_flood(self):
        d = self.start(self.web_config("web-12.yml", bcrypt_hash("prom", "right horse", 12)))
        times = []
        with WrongPasswordFlood(d.port, self.FLOODERS) as flood:
            time.sleep(0.5)  # every flooder has a check waiting or running
            end = time.monotonic() + 4
            while time.monotonic() < end:
                status, took, body = self.scrape(d.port)
                self.assertEqual(status, 200)
                self.assertIn(b"rdma_healthd_build_info", body)
                times.append(took)
                time.sleep(0.1)
            with flood.lock:
                answers = dict(flood.answers)
        median, worst = statistics.median(times), max(times)
        note = f"n={len(times)} median {median:.3f} s max {worst:.3f} s; the flood was answered {answers}"
        # The flood ran: its wrong passwords went through bcrypt (401) while these scrapes went on.
        self.assertGreater(answers.get(401, 0), 0, note)
        self.assertLess(median, 0.3, note)
        self.assertLess(worst, 2.0, note)
        self.assertIsNone(d.proc.poll())

    def test_sigterm_during_a_flood_does_not_wait_for_bcrypt(self):
        # The highest cost accepted: about a second of CPU per check.
        d = self.start(self.web_config("web-max.yml", bcrypt_hash("prom", "right horse", 14)), remember=False)
        with WrongPasswordFlood(d.port, self.FLOODERS):
            time.sleep(1.0)  # a check is running, others wait
            t0 = time.monotonic()
            d.proc.send_signal(signal.SIGTERM)
            try:
                code = d.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                code = None
            took = time.monotonic() - t0
        self.assertEqual(code, 0, "\n".join(d.log_lines[-10:]))
        self.assertLess(took, 2.0, f"SIGTERM to exit took {took:.2f} s")

    def test_bcrypt_cost_above_the_bound_is_refused_at_start(self):
        path = self.web_config("web-17.yml", "$2y$17$" + "a" * 53)
        t0 = time.monotonic()
        p = run(f"--web.config.file={path}", "--web.listen-address=127.0.0.1:0", *fixture_args(), timeout=20)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn("web-17.yml:2:9: basic_auth_users: prom: bcrypt cost 17 is above 14", p.stderr)
        self.assertLess(time.monotonic() - t0, 5)

if __name__ == "__main__":
    unittest.main(verbosity=2)
