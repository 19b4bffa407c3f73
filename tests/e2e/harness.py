"""Runs the built rdma-healthd as a real process and talks to it over HTTP on 127.0.0.1 only."""

import os
import re
import signal
import subprocess
import time
import urllib.request

SOURCE_DIR = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
REAL_FIXTURES = os.environ.get("RDMAHD_REAL_FIXTURES") or os.path.join(SOURCE_DIR, "..", "shared", "fixtures", "real")


def binary():
    path = os.environ.get("RDMAHD_BINARY")
    if not path or not os.access(path, os.X_OK):
        raise RuntimeError("RDMAHD_BINARY must name the built rdma-healthd (ctest sets it)")
    return path


class Daemon:
    """rdma-healthd on an ephemeral loopback port; the port is read from its 'listening' log line."""

    def __init__(self, *args, env=None):
        self.args = [binary(), "--web.listen-address=127.0.0.1:0", "--log.format=text", *args]
        self.env = dict(os.environ, **(env or {}))
        self.env.pop("JOURNAL_STREAM", None)
        self.proc = None
        self.port = None
        self.log_lines = []

    def __enter__(self):
        self.proc = subprocess.Popen(self.args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                     text=True, env=self.env)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            line = self.proc.stderr.readline()
            if not line:
                break
            self.log_lines.append(line.rstrip("\n"))
            m = re.search(r'msg=listening .*\bport=(\d+)', line)
            if m:
                self.port = int(m.group(1))
                break
        if self.port is None:
            self.stop()
            raise RuntimeError("daemon did not start:\n" + "\n".join(self.log_lines))
        return self

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
        if self.proc and self.proc.stderr:
            rest = self.proc.stderr.read()
            self.log_lines.extend(l for l in rest.splitlines() if l)

    def signal(self, sig):
        self.proc.send_signal(sig)

    def read_log_until(self, pattern, timeout=10):
        """Reads log lines until one matches pattern; returns it (or None on timeout/exit)."""
        import select
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            r, _, _ = select.select([self.proc.stderr], [], [], 0.2)
            if r:
                line = self.proc.stderr.readline()
                if not line:
                    return None
                self.log_lines.append(line.rstrip("\n"))
                if re.search(pattern, line):
                    return line
        return None

    def get(self, path):
        """(status, content_type, body) of GET http://127.0.0.1:PORT/path."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=10) as r:
                return r.status, r.headers.get("Content-Type"), r.read().decode()
        except urllib.error.HTTPError as e:
            return e.code, e.headers.get("Content-Type"), e.read().decode()


# Values that change from run to run; golden comparisons mask them.
VOLATILE = re.compile(r'^(rdma_healthd_collector_duration_seconds|'
                      r'rdma_healthd_config_last_reload_success_timestamp_seconds)(\{.*\})? ')


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
