#!/usr/bin/env python3
"""Bad HTTP clients held against rdma-healthd and, as the reference, node_exporter, in the same run:
idle connections, slowloris clients (a header that never ends, one byte a second) and slow readers
(a large /metrics asked for and never read). While they are held, normal scrapes of /metrics and of
a cheap endpoint (/-/healthy; node_exporter has none, so its landing page) are timed.

Prints the latencies for both and exits 1 when an rdma-healthd scrape misses the target (no answer,
or slower than --target-ms). Loopback only. Usage:
  bench/http_load.py --rdma-healthd build/rdma-healthd [--idle 500 --slowloris 200 --slow-readers 20]
"""

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "e2e"))

from bad_clients import BadClients  # noqa: E402  (tests/e2e/bad_clients.py)
from benchlib import free_port, proc_status_kib, wait_up  # noqa: E402  (bench/benchlib.py)


def get(port, path, timeout):
    t0 = time.monotonic()
    with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
        body = r.read()
        if r.status != 200:
            raise OSError(f"status {r.status}")
    return time.monotonic() - t0, len(body)


def measure(name, port, pid, cheap, a):
    with BadClients(port, a.idle, a.slowloris, a.slow_readers, collect_errors=True, settle=0.5) as held:
        rss = proc_status_kib(pid, "VmRSS")
        results = {"/metrics": [], cheap: []}
        failures = list(held.errors)
        for _ in range(a.scrapes):
            for path in results:
                try:
                    took, _ = get(port, path, timeout=a.timeout)
                    results[path].append(took * 1000)
                except OSError as e:
                    failures.append(f"{path}: {e}")
            time.sleep(a.spacing)
    print(f"{name}: {a.idle} idle, {a.slowloris} slowloris, {a.slow_readers} slow readers held "
          f"({len(held.socks)} connections opened; server RSS {rss / 1024:.1f} MiB while held)")
    for path, ms in results.items():
        if ms:
            print(f"  {path:12s} n={len(ms):3d}  median {statistics.median(ms):7.1f} ms  "
                  f"max {max(ms):7.1f} ms")
    for f in failures[:5]:
        print(f"  FAILED: {f}")
    return results, failures


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rdma-healthd", required=True)
    ap.add_argument("--node-exporter", default=shutil.which("prometheus-node-exporter") or "prometheus-node-exporter")
    ap.add_argument("--devices", type=int, default=16, help="devices in the generated tree (size of /metrics)")
    ap.add_argument("--idle", type=int, default=500)
    ap.add_argument("--slowloris", type=int, default=200)
    ap.add_argument("--slow-readers", type=int, default=20)
    ap.add_argument("--scrapes", type=int, default=20)
    ap.add_argument("--spacing", type=float, default=0.3,
                    help="seconds between scrapes (> rdma-healthd's cache window: every scrape collects)")
    ap.add_argument("--timeout", type=float, default=15)
    ap.add_argument("--target-ms", type=float, default=100)
    a = ap.parse_args()

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = a.idle + a.slowloris + a.slow_readers + 256
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))

    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tree = tempfile.mkdtemp(prefix="rdmahd-http-", dir=tmpfs)
    procs = []
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), tree, "--devices", str(a.devices)],
                       check=True, capture_output=True, text=True)
        sysfs = os.path.join(tree, "sys")
        rp, np_ = free_port(), free_port()
        rdma = subprocess.Popen([a.rdma_healthd, f"--web.listen-address=127.0.0.1:{rp}", f"--path.sysfs={sysfs}",
                                 "--log.level=warn"], stderr=subprocess.DEVNULL)
        procs.append(rdma)
        ne = subprocess.Popen([a.node_exporter, "--collector.disable-defaults", "--collector.infiniband",
                               f"--path.sysfs={sysfs}", f"--web.listen-address=127.0.0.1:{np_}", "--log.level=warn"],
                              stderr=subprocess.DEVNULL)
        procs.append(ne)
        wait_up(rp, rdma, "rdma-healthd", attempt_timeout=5)
        wait_up(np_, ne, "node_exporter", attempt_timeout=5)
        print(f"/metrics size: rdma-healthd {get(rp, '/metrics', 10)[1]} bytes, "
              f"node_exporter {get(np_, '/metrics', 10)[1]} bytes")
        ours, our_failures = measure("rdma-healthd", rp, rdma.pid, "/-/healthy", a)
        measure("node_exporter", np_, ne.pid, "/", a)
        worst = max((max(v) for v in ours.values() if v), default=float("inf"))
        if our_failures or any(len(v) < a.scrapes for v in ours.values()) or worst > a.target_ms:
            print(f"rdma-healthd MISSED the target: every scrape answered in < {a.target_ms:.0f} ms "
                  f"(worst {worst:.1f} ms, {len(our_failures)} failures)")
            return 1
        print(f"rdma-healthd met the target: worst scrape {worst:.1f} ms < {a.target_ms:.0f} ms")
        return 0
    finally:
        for p in procs:
            p.terminate()
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
