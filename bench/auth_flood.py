#!/usr/bin/env python3
"""Wrong-password floods against rdma-healthd with basic auth, for one or more builds in the same run.

For each build (NAME=PATH), with a bcrypt hash of --cost (made with htpasswd):
  - the real user's password is verified once (so it is cached), then N clients, each from its own
    loopback address (127.0.0.2, 127.0.0.3, ...; or N clients sharing A addresses, --clients N@A),
    each on one keep-alive connection, send wrong passwords as fast as they are answered
    while the real user scrapes /metrics every --spacing seconds; prints the median and max of
    those scrapes and what the flood was answered;
  - for each of --stop-costs: the daemon with a hash of that cost, 8 flooding clients, then SIGTERM;
    prints how long the process took to exit (or that it refused the hash at start, and why).

Loopback only; every loop bounded in time. Usage:
  bench/auth_flood.py --build before=/tmp/old/rdma-healthd --build after=build/rdma-healthd
"""

import argparse
import base64
import http.client
import multiprocessing
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from benchlib import free_port, stop  # noqa: E402  (bench/benchlib.py)

USER, PASSWORD = "prom", "right horse"
FIXTURE = os.path.join(SOURCE, "tests", "fixtures", "sysfs", "mlx5-roce")
EMPTY_DCB = os.path.join(SOURCE, "tests", "fixtures", "empty-dcb")


def auth_header(user, password):
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def bcrypt(cost):
    p = subprocess.run(["htpasswd", "-nbBC", str(cost), USER, PASSWORD], capture_output=True, text=True,
                       check=True, timeout=600)
    return p.stdout.strip().split(":", 1)[1]


def flood_client(port, source, stop_at, counts, lock):
    """Wrong passwords from `source` until `stop_at`, one at a time, on a keep-alive connection."""
    conn = None
    while time.monotonic() < stop_at:
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30, source_address=(source, 0))
            conn.request("GET", "/metrics", headers=auth_header(USER, "wrong"))
            r = conn.getresponse()
            r.read()
            key = r.status
            if r.getheader("Connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            key = type(e).__name__
            if conn:
                conn.close()
            conn = None
            time.sleep(0.01)
        with lock:
            counts[key] = counts.get(key, 0) + 1
    if conn:
        conn.close()


def flood_process(port, sources, seconds, out):
    """One process of the flood (several, so the flood is not held back by one interpreter's lock)."""
    stop_at = time.monotonic() + seconds
    counts, lock = {}, threading.Lock()
    threads = [threading.Thread(target=flood_client, args=(port, s, stop_at, counts, lock)) for s in sources]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out.put(counts)


class Flood:
    def __init__(self, port, clients, seconds, processes=4, addresses=None):
        addresses = addresses or clients
        sources = [f"127.0.0.{2 + i % addresses}" for i in range(clients)]
        self.out = multiprocessing.Queue()
        self.procs = [multiprocessing.Process(target=flood_process, args=(port, sources[i::processes], seconds, self.out))
                      for i in range(min(processes, clients))]

    def __enter__(self):
        for p in self.procs:
            p.start()
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.join(timeout=60)
            if p.is_alive():
                p.kill()

    def answers(self):
        total = {}
        for _ in self.procs:
            for k, v in self.out.get(timeout=60).items():
                total[k] = total.get(k, 0) + v
        return total


def start(binary, web_yml, wait_ready=True):
    port = free_port()
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}", f"--web.config.file={web_yml}",
                             f"--path.sysfs={FIXTURE}", f"--path.dcb={EMPTY_DCB}", "--log.level=warn"],
                            stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return proc, port, proc.stderr.read().strip()
        try:
            if not wait_ready:  # listening is enough (any request would cost a bcrypt)
                socket.create_connection(("127.0.0.1", port), timeout=5).close()
                return proc, port, None
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
            conn.request("GET", "/-/ready", headers=auth_header(USER, PASSWORD))
            status = conn.getresponse().status
            conn.close()
            if status == 200:
                return proc, port, None
        except OSError:
            pass
        time.sleep(0.1)
    proc.kill()
    return proc, port, "did not start"


def scrape(port):
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics", headers=auth_header(USER, PASSWORD))
        r = conn.getresponse()
        r.read()
        return r.status, time.monotonic() - t0
    finally:
        conn.close()


def measure_flood(name, binary, web_yml, spec, a):
    clients, _, addresses = spec.partition("@")
    clients, addresses = int(clients), int(addresses or clients)
    proc, port, problem = start(binary, web_yml)
    if problem:
        print(f"{name}: {spec} clients: the daemon did not start: {problem}")
        return
    try:
        times, statuses = [], {}
        with Flood(port, clients, a.seconds, addresses=addresses) as flood:
            time.sleep(0.5)
            end = time.monotonic() + a.seconds - 1.0
            while time.monotonic() < end:
                try:
                    status, took = scrape(port)
                except (OSError, http.client.HTTPException) as e:
                    status, took = type(e).__name__, a.seconds
                statuses[status] = statuses.get(status, 0) + 1
                times.append(took)
                time.sleep(a.spacing)
            answers = flood.answers()
        print(f"{name}: cost {a.cost}, {clients:2d} flooding clients from {addresses:2d} addresses: "
              f"real user's /metrics n={len(times)} "
              f"median {statistics.median(times):.3f} s, max {max(times):.3f} s, statuses {statuses}; "
              f"flood answered {dict(sorted(answers.items(), key=str))}")
    finally:
        stop(proc, timeout=60)


def measure_stop(name, binary, web_yml, cost):
    t0 = time.monotonic()
    proc, port, problem = start(binary, web_yml, wait_ready=False)
    if problem:
        print(f"{name}: cost {cost}: refused at start after {time.monotonic() - t0:.2f} s: {problem[-400:]}")
        return
    try:
        with Flood(port, 8, 4.0, processes=2) as flood:
            time.sleep(1.5)  # checks are running
            t0 = time.monotonic()
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=120)
                took = f"{time.monotonic() - t0:.2f} s"
            except subprocess.TimeoutExpired:
                took = "more than 120 s"
            flood.answers()
        print(f"{name}: cost {cost}, 8 flooding clients: SIGTERM to exit {took} (exit code {proc.returncode})")
    finally:
        stop(proc, timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="NAME=PATH of an rdma-healthd binary")
    ap.add_argument("--cost", type=int, default=12)
    ap.add_argument("--clients", default="8,64,64@1",
                    help="flooding clients per run, comma-separated; N@A: N clients sharing A addresses")
    ap.add_argument("--seconds", type=float, default=12)
    ap.add_argument("--spacing", type=float, default=0.25)
    ap.add_argument("--stop-costs", default="14,17")
    a = ap.parse_args()
    builds = [b.split("=", 1) for b in a.build]
    with tempfile.TemporaryDirectory(prefix="rdmahd-auth-") as tmp:
        hashes = {}
        for cost in sorted({a.cost, *(int(c) for c in a.stop_costs.split(",") if c)}):
            path = os.path.join(tmp, f"web-{cost}.yml")
            with open(path, "w") as f:
                f.write(f"basic_auth_users:\n  {USER}: {bcrypt(cost)}\n")
            hashes[cost] = path
        for spec in (c for c in a.clients.split(",") if c):
            for name, binary in builds:
                measure_flood(name, binary, hashes[a.cost], spec, a)
        for cost in (int(c) for c in a.stop_costs.split(",") if c):
            for name, binary in builds:
                measure_stop(name, binary, hashes[cost], cost)
    return 0


if __name__ == "__main__":
    sys.exit(main())
