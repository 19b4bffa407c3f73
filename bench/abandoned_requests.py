#!/usr/bin/env python3
"""Requests whose client left, against rdma-healthd, for one or more builds in the same run.

For each build (NAME=PATH): the daemon on the project's mlx5-roce fixture (or, with --devices N, on a
tree of N generated devices: bench/gen_tree.py), then:
  1. /metrics timed on the idle daemon (median of --idle tries);
  2. a burst of --count requests for --path (default /api/v1/checks), each a whole GET sent on its own
     connection, which is closed at once (FIN), spread over --sources loopback addresses
     (127.0.0.2, 127.0.0.3, ...) so that the per-client connection cap does not refuse most of them;
  3. /metrics timed right after the burst, from 127.0.0.1 (bounded by --wait seconds).
Prints both times per build and, with two or more builds, each one's after-burst time against the
first's. The daemon's own scrape cache and defaults apply (as a user runs it).

Loopback only; every wait bounded. Usage:
  bench/abandoned_requests.py --build before=/tmp/old/rdma-healthd --build after=build/rdma-healthd
  bench/abandoned_requests.py --devices 2000 --path / --count 20 --build ...
"""

import argparse
import os
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.abspath(os.path.join(HERE, ".."))
sys.path.insert(0, HERE)

from benchlib import free_port, stop, wait_up  # noqa: E402  (bench/benchlib.py)

FIXTURE = os.path.join(SOURCE, "tests", "fixtures", "sysfs", "mlx5-roce", "sys")
EMPTY_DCB = os.path.join(SOURCE, "tests", "fixtures", "empty-dcb")


def time_get(port, path, wait):
    """Seconds GET path took (whole body read), or None past `wait`."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=wait) as r:
            r.read()
    except urllib.error.HTTPError:
        pass
    except OSError:
        return None
    took = time.monotonic() - t0
    return took if took <= wait else None


def burst(port, path, count, sources):
    """`count` whole requests for `path`, each closed as soon as it is sent; seconds taken, sent."""
    request = f"GET {path} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
    sent = 0
    t0 = time.monotonic()
    for i in range(count):
        s = socket.socket()
        s.settimeout(2)
        try:
            s.bind((f"127.0.0.{2 + i % sources}", 0))
            s.connect(("127.0.0.1", port))
            s.sendall(request)
            sent += 1
        except OSError:
            pass  # refused or closed at once (a cap): the client moves on
        finally:
            s.close()
    return time.monotonic() - t0, sent


def run_one(name, binary, tree, args):
    port = free_port()
    sysfs, dcb = tree
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}",
                             f"--path.sysfs={sysfs}", f"--path.dcb={dcb}",
                             "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(port, proc, name, args.wait)
        idle = [time_get(port, "/metrics", args.wait) for _ in range(args.idle)]
        idle = statistics.median(t for t in idle if t is not None) if any(t is not None for t in idle) else None
        took, sent = burst(port, args.path, args.count, args.sources)
        after = time_get(port, "/metrics", args.wait)
        fmt = lambda t: f"{t:.3f} s" if t is not None else f"no answer in {args.wait:.0f} s"
        print(f"{name:>8}: /metrics idle {fmt(idle)}; {sent} of {args.count} {args.path} sent and closed "
              f"in {took:.2f} s; /metrics then {fmt(after)}", flush=True)
        return after
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="NAME=PATH of an rdma-healthd binary")
    ap.add_argument("--path", default="/api/v1/checks", help="what the abandoned requests ask for")
    ap.add_argument("--count", type=int, default=2500)
    ap.add_argument("--sources", type=int, default=16, help="loopback source addresses to spread the burst over")
    ap.add_argument("--devices", type=int, default=0, help="a generated tree of N devices instead of the fixture")
    ap.add_argument("--idle", type=int, default=5, help="idle /metrics tries (the median is shown)")
    ap.add_argument("--wait", type=float, default=120.0)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    workdir = None
    tree = (FIXTURE, EMPTY_DCB)
    if args.devices > 0:
        workdir = tempfile.mkdtemp(prefix="rdmahd-abandoned-")
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), workdir, f"--devices={args.devices}"],
                       check=True, stdout=subprocess.DEVNULL)
        tree = (os.path.join(workdir, "sys"), os.path.join(workdir, "dcb"))
    try:
        results = []
        for spec in args.build:
            name, _, path = spec.partition("=")
            results.append((name, run_one(name, path, tree, args)))
        first_name, first = results[0]
        for name, after in results[1:]:
            if first is not None and after:
                print(f"/metrics after the burst: {first_name} {first:.3f} s / {name} {after:.3f} s = "
                      f"{first / after:.1f}x", flush=True)
    finally:
        if workdir:
            shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
