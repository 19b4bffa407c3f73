#!/usr/bin/env python3
"""Half-request bursts against rdma-healthd, for one or more builds in the same run.

For each build (NAME=PATH): the daemon on the project's mlx5-roce fixture, then a burst of --count
connections, each sending part of a request header and closing at once (FIN), spread over --sources
loopback addresses (127.0.0.2, 127.0.0.3, ...) so that a per-client cap alone cannot absorb them.
The attacker keeps no socket. Prints how long the burst took and, from the burst's end, how long
until /-/healthy and /metrics answer again (each polled with short timeouts, up to --wait seconds).

Loopback only; every wait bounded. Usage:
  bench/half_request_burst.py --build before=/tmp/old/rdma-healthd --build after=build/rdma-healthd
"""

import argparse
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from benchlib import free_port, stop, wait_up  # noqa: E402  (bench/benchlib.py)

FIXTURE = os.path.join(SOURCE, "tests", "fixtures", "sysfs", "mlx5-roce")
EMPTY_DCB = os.path.join(SOURCE, "tests", "fixtures", "empty-dcb")


def answers_within(port, path, wait):
    """Seconds until GET path answers (any status), polling with 0.5 s tries; None past `wait`."""
    start = time.monotonic()
    while time.monotonic() - start < wait:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=0.5) as r:
                r.read()
            return time.monotonic() - start
        except urllib.error.HTTPError:
            return time.monotonic() - start
        except OSError:
            time.sleep(0.05)
    return None


def burst(port, count, sources):
    t0 = time.monotonic()
    for i in range(count):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.bind((f"127.0.0.{2 + i % sources}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-a: ")
        except OSError:
            pass  # refused or closed at once (a cap): the attacker moves on
        finally:
            s.close()
    return time.monotonic() - t0


def run_one(name, binary, args):
    port = free_port()
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}",
                             f"--path.sysfs={FIXTURE}", f"--path.procfs={FIXTURE}", f"--path.dcb={EMPTY_DCB}",
                             "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(port, proc, name, 2)
        took = burst(port, args.count, args.sources)
        healthy = answers_within(port, "/-/healthy", args.wait)
        metrics = answers_within(port, "/metrics", args.wait)
        fmt = lambda t: f"{t:.2f} s" if t is not None else f"no answer in {args.wait:.0f} s"
        print(f"{name:>8}: burst of {args.count} half requests from {args.sources} addresses in {took:.2f} s; "
              f"/-/healthy after {fmt(healthy)}, /metrics after {fmt(metrics)}", flush=True)
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="NAME=PATH of an rdma-healthd binary")
    ap.add_argument("--count", type=int, default=1100)
    ap.add_argument("--sources", type=int, default=8, help="loopback source addresses to spread the burst over")
    ap.add_argument("--wait", type=float, default=75.0)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    for spec in args.build:
        name, _, path = spec.partition("=")
        run_one(name, path, args)


if __name__ == "__main__":
    main()
