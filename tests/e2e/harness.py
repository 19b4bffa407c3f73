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
                      r'rdma_healthd_unheld_reads_total)(\{.*\})? ')


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
