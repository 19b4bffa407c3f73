"""Helpers shared by the benchmark scripts in this folder."""

import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_status_kib(pid, field):
    """A kB figure of /proc/PID/status, e.g. VmRSS (resident now) or VmHWM (peak resident); 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def wait_up(port, proc, name, attempt_timeout):
    """Waits up to 20 s until 127.0.0.1:port answers /metrics (each try bounded by attempt_timeout
    seconds); exits the script when `proc` exits first or the time runs out."""
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=attempt_timeout) as r:
                r.read()
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{name} did not come up on 127.0.0.1:{port}")


def stop(proc, timeout=20):
    """Ends a process this script started: SIGTERM, then SIGKILL after `timeout` seconds."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
