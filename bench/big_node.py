#!/usr/bin/env python3
"""The status page and the JSON API on a big node (issue #41 item 10), for one or more builds in the
same run. A benchmark, not a timed test: it prints figures and asserts nothing about them.

A tree of --devices generated devices (bench/gen_tree.py, default 2,000 devices x 2 RoCE ports, in a
temporary folder; its own dcb/ as --path.dcb), then for each build (NAME=PATH) the daemon on it,
started as a user runs it (defaults, scrape cache included), and, once it is ready:
  - `/`: one request, its bytes and seconds;
  - `/`: --concurrent requests at once (each on its own connection), p50 and max seconds;
  - `/api/v1/checks`: unfiltered, and `?status=failed,warning`: bytes and seconds;
  - `/?device=<--device>`: bytes and seconds;
  - `/metrics`: seconds, the reference (what a scrape costs on the same node);
  - the daemon's VmHWM (peak resident) and VmRSS after all of it.
A build that predates the query arguments ignores them: its figures for a filtered address are
those of the unfiltered one (the figures say so: same bytes). With two or more builds, each later
build's figures are given as ratios to the first's (below 1: smaller or faster).

Loopback only; every wait bounded (--timeout per request); temporary folders only; only the
daemons this script starts are ended, by their process. Usage:
  bench/big_node.py --build before=/tmp/rdma-healthd-46a0217 --build after=build/rdma-healthd
"""

import argparse
import concurrent.futures
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from benchlib import free_port, proc_status_kib, stop, wait_up  # noqa: E402  (bench/benchlib.py)


def get(port, path, timeout):
    """(status, bytes, seconds) of one plain GET (no gzip: the bytes are the body's own)."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            body = r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        body, status = e.read(), e.code
    return status, len(body), time.monotonic() - t0


def wait_ready(port, proc, name, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}")
        try:
            if get(port, "/-/ready", 5)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.2)
    sys.exit(f"{name} was not ready within {timeout:.0f} s")


def measure(name, binary, tree, a):
    sysfs, dcb = tree
    port = free_port()
    proc = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}", f"--path.sysfs={sysfs}",
                             f"--path.dcb={dcb}", "--log.level=warn"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_up(port, proc, name, a.timeout)
        wait_ready(port, proc, name, a.timeout)
        r = {}

        def one(key, path):
            status, size, secs = get(port, path, a.timeout)
            if status != 200:
                print(f"{name}: {path} answered {status}", file=sys.stderr)
            r[key + " bytes"], r[key + " s"] = size, secs

        one("/", "/")
        with concurrent.futures.ThreadPoolExecutor(a.concurrent) as pool:
            futures = [pool.submit(get, port, "/", a.timeout) for _ in range(a.concurrent)]
            times = [f.result()[2] for f in futures]
        r[f"/ x{a.concurrent} p50 s"] = statistics.median(times)
        r[f"/ x{a.concurrent} max s"] = max(times)
        one("/api/v1/checks", "/api/v1/checks")
        one("?status=failed,warning", "/api/v1/checks?status=failed,warning")
        one(f"/?device={a.device}", f"/?device={a.device}")
        _, _, r["/metrics s"] = get(port, "/metrics", a.timeout)
        r["VmHWM MiB"] = proc_status_kib(proc.pid, "VmHWM") / 1024
        r["VmRSS MiB"] = proc_status_kib(proc.pid, "VmRSS") / 1024
        return r
    finally:
        stop(proc)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", action="append", required=True, help="NAME=PATH of an rdma-healthd binary")
    ap.add_argument("--devices", type=int, default=2000)
    ap.add_argument("--ports", type=int, default=2, help="ports per device (bench/gen_tree.py)")
    ap.add_argument("--device", default="mlx5_7", help="the device asked for with /?device=")
    ap.add_argument("--concurrent", type=int, default=24)
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds any one wait may take")
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(max(soft, 4096), hard), hard))
    builds = []
    for spec in a.build:
        name, _, path = spec.partition("=")
        if not path or not os.access(path, os.X_OK):
            sys.exit(f"--build {spec}: want NAME=PATH of an executable")
        builds.append((name, path))
    workdir = tempfile.mkdtemp(prefix="rdmahd-big-node-")
    try:
        t0 = time.monotonic()
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), workdir, f"--devices={a.devices}",
                        f"--ports={a.ports}"], check=True, stdout=subprocess.DEVNULL, timeout=1800)
        print(f"tree: {a.devices} devices x {a.ports} ports, generated in {time.monotonic() - t0:.0f} s", flush=True)
        tree = (os.path.join(workdir, "sys"), os.path.join(workdir, "dcb"))
        results = []
        for name, path in builds:
            results.append((name, measure(name, path, tree, a)))
        report(results)  # before the tree goes: removing millions of files takes a while
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def report(results):
    keys = list(results[0][1])
    names = [n for n, _ in results]
    head = f"{'figure':<28}" + "".join(f"{n:>14}" for n in names)
    head += "".join(f"{n + '/' + names[0]:>16}" for n in names[1:])
    print(head)
    for k in keys:
        line = f"{k:<28}"
        for _, r in results:
            v = r[k]
            line += f"{v:>14,}" if isinstance(v, int) else f"{v:>14.3f}"
        for _, r in results[1:]:
            base = results[0][1][k]
            line += f"{(r[k] / base if base else float('nan')):>16.4f}"
        print(line, flush=True)


if __name__ == "__main__":
    main()
