#!/usr/bin/env python3
"""CPU time per fresh scrape and peak RSS: rdma-healthd against node_exporter's infiniband collector
on the same generated tree, in the same run, scraped alternately. Prints absolute figures and the
ratios (rdma-healthd / node_exporter); the ratios are what to compare across machines.

CPU per scrape = growth of the sum of every thread's run time (/proc/PID/task/*/schedstat, ns)
across the scrape, so HTTP handling, collection and serialisation all count. Scrapes are spaced
wider than rdma-healthd's cache window so every one is a fresh collection.
"""

import argparse
import glob
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return total


def peak_rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def held_files(pid, root):
    """The files under `root` that process `pid` holds open."""
    out = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(root + "/") and os.path.isfile(target):
            out.append(target)
    return sorted(out)


def floor_pass(proc):
    proc.stdin.write("scrape\n")
    proc.stdin.flush()
    if not proc.stdout.readline().startswith("ok"):
        sys.exit("rdmahd_pread_floor failed")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        return r.read()


def wait_up(port, proc, name):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            sys.exit(f"{name} exited with {proc.returncode}")
        try:
            scrape(port)
            return
        except OSError:
            time.sleep(0.1)
    sys.exit(f"{name} did not come up on 127.0.0.1:{port}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-healthd", required=True)
    ap.add_argument("--node-exporter", default=shutil.which("prometheus-node-exporter") or "prometheus-node-exporter")
    ap.add_argument("--pread-floor", help="rdmahd_pread_floor binary (default: next to --rdma-healthd)")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--scrapes", type=int, default=40)
    ap.add_argument("--spacing", type=float, default=0.3, help="seconds between scrapes (> cache window)")
    a = ap.parse_args()
    floor_bin = a.pread_floor or os.path.join(os.path.dirname(os.path.abspath(a.rdma_healthd)), "rdmahd_pread_floor")
    if not os.access(floor_bin, os.X_OK):
        sys.exit(f"{floor_bin} not found: build the rdmahd_pread_floor target (bench/run.sh does)")

    # sysfs lives in memory: put the tree on tmpfs so neither exporter pays disk-filesystem costs
    # (page-cache lookups, atime updates) that a real /sys does not have.
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tree = tempfile.mkdtemp(prefix="rdmahd-bench-", dir=tmpfs)
    try:
        out = subprocess.run([sys.executable, os.path.join(HERE, "gen_tree.py"), tree, "--devices", str(a.devices)],
                             check=True, capture_output=True, text=True).stdout.strip()
        print("tree:", out)
        sysfs = os.path.join(tree, "sys")
        rp, np_ = free_port(), free_port()
        procs = {
            "rdma-healthd": (subprocess.Popen([a.rdma_healthd, f"--web.listen-address=127.0.0.1:{rp}",
                                               f"--path.sysfs={sysfs}", "--log.level=warn"],
                                              stderr=subprocess.DEVNULL), rp),
            "node_exporter": (subprocess.Popen([a.node_exporter, "--collector.disable-defaults",
                                                "--collector.infiniband", f"--path.sysfs={sysfs}",
                                                f"--web.listen-address=127.0.0.1:{np_}", "--log.level=warn"],
                                               stderr=subprocess.DEVNULL), np_),
        }
        try:
            for name, (proc, port) in procs.items():
                wait_up(port, proc, name)
            samples = {name: [] for name in procs}
            sizes = {}
            for _ in range(3):  # warm-up: first-scrape costs (opening held files, Go runtime) excluded
                for name, (proc, port) in procs.items():
                    scrape(port)
                time.sleep(a.spacing)
            # The floor: the files rdma-healthd holds open, each read once with one pread and nothing
            # else, in a third process scraped in the same rounds.
            held = held_files(procs["rdma-healthd"][0].pid, sysfs)
            list_file = os.path.join(tree, "held-files.txt")
            with open(list_file, "w") as f:
                f.write("\n".join(held) + "\n")
            floor = subprocess.Popen([floor_bin, list_file], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            floor_pass(floor)
            floor_samples = []
            for _ in range(a.scrapes):
                for name, (proc, port) in procs.items():
                    before = cpu_ns(proc.pid)
                    body = scrape(port)
                    time.sleep(0.05)  # let the server finish its bookkeeping after the response
                    samples[name].append(cpu_ns(proc.pid) - before)
                    sizes[name] = body
                before = cpu_ns(floor.pid)
                floor_pass(floor)
                time.sleep(0.05)
                floor_samples.append(cpu_ns(floor.pid) - before)
                time.sleep(a.spacing)
            rss = {name: peak_rss_kib(proc.pid) for name, (proc, _) in procs.items()}
            floor.stdin.close()
            floor.wait(timeout=10)
        finally:
            for proc, _ in procs.values():
                proc.terminate()
                proc.wait(timeout=10)

        def series(body):
            return sum(1 for l in body.decode().splitlines() if l and not l.startswith("#"))

        print(f"{'':16}{'CPU/scrape median':>20}{'p90':>10}{'peak RSS':>12}{'series':>8}")
        med = {}
        for name in procs:
            s = sorted(samples[name])
            med[name] = statistics.median(s)
            p90 = s[int(len(s) * 0.9) - 1]
            print(f"{name:16}{med[name] / 1e6:>17.3f} ms{p90 / 1e6:>7.3f} ms{rss[name] / 1024:>9.1f} MiB"
                  f"{series(sizes[name]):>8}")
        cpu_ratio = med["rdma-healthd"] / med["node_exporter"]
        rss_ratio = rss["rdma-healthd"] / rss["node_exporter"]
        print(f"ratio rdma-healthd/node_exporter: CPU per scrape {cpu_ratio:.3f} (target <= 0.2), "
              f"peak RSS {rss_ratio:.3f} (target <= 0.5)")
        hw = sizes["rdma-healthd"].count(b"rdma_port_hw_counters_total{")
        print(f"rdma-healthd exported {hw} hw_counters series; node_exporter "
              f"{sizes['node_exporter'].count(b'hw_counter')}")
        floor_med = statistics.median(floor_samples)
        print(f"floor: one pread of each of the {len(held)} files rdma-healthd holds: {floor_med / 1e6:.3f} ms "
              f"= {floor_med / med['node_exporter']:.3f} of node_exporter's scrape; "
              f"rdma-healthd's scrape = {med['rdma-healthd'] / floor_med:.2f} x the floor")
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
