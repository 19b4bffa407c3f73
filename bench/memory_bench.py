#!/usr/bin/env python3
"""Memory per RDMA device: rdma-healthd and node_exporter (infiniband collector only) on generated
trees (bench/gen_tree.py, on tmpfs) of a small and a large device count, in the same run. For each
size it prints each process's resident set after a few scrapes (VmRSS, its anonymous part RssAnon,
the peak VmHWM) and the files rdma-healthd holds open; then, from the difference between the two
sizes, rdma-healthd's bytes per device (anonymous memory: the heap, which is what grows with the
tree), and the RSS ratio against node_exporter at the large size. Bytes per held file come from a
third run on the large tree with RLIMIT_NOFILE at 1,200 (a held-file budget of 112, where the same
values are read open/read/close): the difference in anonymous memory over the difference in held
files (the descriptors' kernel memory is not in RSS). A fourth run, beside node_exporter, switches
every check off (a config file naming each check the first run exported): what collecting and
exporting cost alone, apart from judging (verdicts, the history the rates are judged on).

usage: memory_bench.py --rdma-healthd BUILD/rdma-healthd [--devices 1000] [--small 10] [--scrapes 5] [--gzip]
                       [--gid-table 8] [--repeat N]

--repeat N measures the large tree N times, each a fresh pair of processes, and prints the median
VmRSS ratio: node_exporter's own RSS moves by 10-20% between runs, so one run's ratio is noisy.
"""

import argparse
import gzip
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchlib import free_port, proc_status_kib, stop, wait_up  # bench/benchlib.py, next to this script

HERE = os.path.dirname(os.path.abspath(__file__))


GZIP = False  # --gzip: scrape as Prometheus does, asking for a gzip-compressed body


def scrape(port):
    headers = {"Accept-Encoding": "gzip"} if GZIP else {}
    req = urllib.request.Request(f"http://127.0.0.1:{port}/metrics", headers=headers)
    with urllib.request.urlopen(req, timeout=120) as r:
        body = r.read()
        return gzip.decompress(body) if r.headers.get("Content-Encoding") == "gzip" else body


def check_names(exposition):
    """The checks an rdma-healthd exposition has verdicts of."""
    return sorted(set(re.findall(rb'^rdma_check_status\{check="([a-z0-9_]+)"', exposition, re.M)))


def held_files(pid, root):
    n = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        n += target.startswith(root + "/")
    return n


def capped_nofile():
    resource.setrlimit(resource.RLIMIT_NOFILE, (1200, 1200))


def measure(a, devices, capped=False, checks_off=()):
    """{name: {rss, anon, hwm (KiB), held}} after a.scrapes scrapes of a `devices`-device tree, and
    "checks": the checks rdma-healthd's last exposition judged; `capped`: rdma-healthd alone, with
    RLIMIT_NOFILE 1,200; `checks_off`: these checks switched off in a config file."""
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tree = tempfile.mkdtemp(prefix="rdmahd-membench-", dir=tmpfs)
    try:
        subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), tree, "--devices", str(devices),
                        "--gid-table", str(a.gid_table)],
                       check=True, capture_output=True)
        sysfs, dcb = os.path.join(tree, "sys"), os.path.join(tree, "dcb")
        config = []
        if checks_off:
            path = os.path.join(tree, "checks-off.yaml")
            with open(path, "w") as f:
                f.write("checks:\n" + "".join(f"  {c.decode()}: false\n" for c in checks_off))
            config = [f"--config.file={path}"]
        rp, np_ = free_port(), free_port()
        procs = {
            "rdma-healthd": (subprocess.Popen([a.rdma_healthd, f"--web.listen-address=127.0.0.1:{rp}",
                                               f"--path.sysfs={sysfs}", f"--path.dcb={dcb}", "--log.level=warn"] + config,
                                              stderr=subprocess.DEVNULL, preexec_fn=capped_nofile if capped else None),
                             rp),
            "node_exporter": (subprocess.Popen([a.node_exporter, "--collector.disable-defaults",
                                                "--collector.infiniband", f"--path.sysfs={sysfs}",
                                                f"--web.listen-address=127.0.0.1:{np_}", "--log.level=warn"],
                                               stderr=subprocess.DEVNULL), np_),
        }
        if capped:
            stop(procs.pop("node_exporter")[0])
        out = {}
        try:
            for name, (proc, port) in procs.items():
                wait_up(port, proc, name, attempt_timeout=120)
            for _ in range(a.scrapes):
                for name, (_proc, port) in procs.items():
                    body = scrape(port)
                    if name == "rdma-healthd":
                        out["checks"] = check_names(body)
                time.sleep(0.3)
            for name, (proc, _port) in procs.items():
                out[name] = {"rss": proc_status_kib(proc.pid, "VmRSS"), "anon": proc_status_kib(proc.pid, "RssAnon"),
                             "hwm": proc_status_kib(proc.pid, "VmHWM"), "held": held_files(proc.pid, tree)}
        finally:
            for proc, _ in procs.values():
                stop(proc)
        return out
    finally:
        shutil.rmtree(tree, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-healthd", required=True)
    ap.add_argument("--node-exporter", default=shutil.which("prometheus-node-exporter") or "prometheus-node-exporter")
    ap.add_argument("--devices", type=int, default=1000)
    ap.add_argument("--small", type=int, default=10, help="the small tree's devices (the baseline of the differences)")
    ap.add_argument("--scrapes", type=int, default=5)
    ap.add_argument("--gzip", action="store_true", help="scrape with Accept-Encoding: gzip, as Prometheus does")
    ap.add_argument("--repeat", type=int, default=1,
                    help="measure the large tree this many times (node_exporter's RSS moves by 10-20%% from run "
                         "to run with its garbage collector) and print the median ratio")
    ap.add_argument("--gid-table", type=int, default=8,
                    help="slots in each port's GID table (bench/gen_tree.py; 255 on mlx5, 8 in earlier figures)")
    a = ap.parse_args()
    global GZIP
    GZIP = a.gzip
    if a.small >= a.devices:
        sys.exit("--small must be below --devices")

    runs = {n: measure(a, n) for n in (a.small, a.devices)}
    checks = runs[a.devices].pop("checks")
    runs[a.small].pop("checks")
    print(f"{'devices':>8} {'process':<14} {'VmRSS MiB':>10} {'RssAnon MiB':>12} {'VmHWM MiB':>10} {'held files':>11}")
    for n, r in runs.items():
        for name, m in r.items():
            print(f"{n:>8} {name:<14} {m['rss'] / 1024:>10.1f} {m['anon'] / 1024:>12.1f} {m['hwm'] / 1024:>10.1f} "
                  f"{m['held']:>11}")
    small, big = runs[a.small]["rdma-healthd"], runs[a.devices]["rdma-healthd"]
    d_anon = (big["anon"] - small["anon"]) * 1024
    print(f"rdma-healthd bytes per device (RssAnon): {d_anon / (a.devices - a.small):.0f}")
    capped = measure(a, a.devices, capped=True)["rdma-healthd"]
    print(f"{a.devices:>8} {'(nofile 1200)':<14} {capped['rss'] / 1024:>10.1f} {capped['anon'] / 1024:>12.1f} "
          f"{capped['hwm'] / 1024:>10.1f} {capped['held']:>11}")
    if big["held"] > capped["held"]:
        print(f"rdma-healthd bytes per held file (RssAnon): "
              f"{(big['anon'] - capped['anon']) * 1024 / (big['held'] - capped['held']):.0f}")
    ne = runs[a.devices]["node_exporter"]
    print(f"VmRSS ratio rdma-healthd / node_exporter at {a.devices} devices: {big['rss'] / ne['rss']:.3f}")
    print(f"VmHWM ratio rdma-healthd / node_exporter at {a.devices} devices: {big['hwm'] / ne['hwm']:.3f}")
    if not checks:
        sys.exit("rdma-healthd's exposition has no rdma_check_status: cannot name the checks to switch off")
    off = measure(a, a.devices, checks_off=checks)
    m, ne_off = off["rdma-healthd"], off["node_exporter"]
    print(f"{a.devices:>8} {'(checks off)':<14} {m['rss'] / 1024:>10.1f} {m['anon'] / 1024:>12.1f} "
          f"{m['hwm'] / 1024:>10.1f} {m['held']:>11}")
    print(f"{a.devices:>8} {'node_exporter':<14} {ne_off['rss'] / 1024:>10.1f} {ne_off['anon'] / 1024:>12.1f} "
          f"{ne_off['hwm'] / 1024:>10.1f} {ne_off['held']:>11}")
    print(f"VmRSS ratio with the {len(checks)} checks that gave verdicts off (collecting and exporting only): "
          f"{m['rss'] / ne_off['rss']:.3f}; judging costs {(big['anon'] - m['anon']) / 1024:.1f} MiB of RssAnon")
    if a.repeat > 1:
        pairs = [(big["rss"], ne["rss"])]
        for _ in range(a.repeat - 1):
            r = measure(a, a.devices)
            pairs.append((r["rdma-healthd"]["rss"], r["node_exporter"]["rss"]))
        ratios = [h / n for h, n in pairs]
        print(f"VmRSS MiB per run (rdma-healthd / node_exporter): "
              + ", ".join(f"{h / 1024:.1f}/{n / 1024:.1f}" for h, n in pairs))
        print(f"VmRSS ratio at {a.devices} devices over {len(ratios)} runs: median {statistics.median(ratios):.3f}, "
              f"min {min(ratios):.3f}, max {max(ratios):.3f}")


if __name__ == "__main__":
    main()
