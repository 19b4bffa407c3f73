#!/usr/bin/env python3
"""CPU time per fresh scrape and peak RSS: rdma-healthd against node_exporter's infiniband collector
on the same generated tree, in the same run, scraped alternately. Prints absolute figures and the
ratios (rdma-healthd / node_exporter); the ratios are what to compare across machines.

CPU per scrape = growth of the sum of every thread's run time (/proc/PID/task/*/schedstat, ns)
across the scrape, so HTTP handling, collection and serialisation all count. rdma-healthd's is also
split by thread name: "collect" (topology and collectors), "http-worker" (checks, rendering,
serialisation), "MHD-single" (libmicrohttpd: the connection and sending the text). Scrapes are spaced
wider than rdma-healthd's cache window so every one is a fresh collection.

The tree (bench/gen_tree.py) has the netdevs behind the RDMA ports with the MLNX_OFED ECN folders
(--no-ecn: without) and a `dcb -j` capture given as --path.dcb, so rdma-healthd's devices, netdev
and roce collectors all run; node_exporter runs its infiniband collector. The floor is one pread of
every file rdma-healthd holds open after the warm-up (all it reads on a steady-state scrape), by a
single-threaded process; the same reads with a second, idle thread (a shared descriptor table, which
makes the kernel count a reference per read, as in any multi-threaded server) are shown beside it.
With --baseline (another build, e.g. the commit before a change) scraped in the same rounds, each
round's two scrapes give one ratio; the median of those ratios and its 95% bootstrap interval
(bench/ratio_ci.py) are printed, which is what "no slower than before" can be judged on here.
Targets: CPU per scrape <= 1.3x the floor and <= 0.35x node_exporter's, peak RSS <= 0.5x.

The tree is on tmpfs, where a read is cheaper than on any sysfs. To show by how much, each round also
reads, once each, up to 800 attribute files of this host's own /sys (network, block-queue, CPU-cache
and NUMA-node attributes: plain show() functions) and copies of the same bytes on tmpfs; the ratio of
the two is the "sysfs cost factor". The last line projects CPU per scrape / floor onto a tree whose
reads cost that much more (rdma-healthd's work besides the reads unchanged): a projection from
figures of the same run, not a measurement of rdma-healthd on a real sysfs.
"""

import argparse
import glob
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

from benchlib import free_port, proc_status_kib, wait_up  # bench/benchlib.py, next to this script
from ratio_ci import bootstrap_median_ci  # bench/ratio_ci.py, next to this script

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_ns(pid):
    total = 0
    for f in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(f) as fh:
                total += int(fh.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return total


def cpu_ns_by_thread_name(pid):
    """Run time (ns) so far per thread name (/proc/PID/task/*/comm): rdma-healthd names its threads."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(f"{task}/comm") as fc, open(f"{task}/schedstat") as fs:
                name = fc.read().strip()
                out[name] = out.get(name, 0) + int(fs.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass  # a thread that just exited
    return out


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


def read_syscalls(pid):
    """read-like syscalls so far (/proc/PID/io syscr; needs the same user or root)."""
    try:
        with open(f"/proc/{pid}/io") as f:
            for line in f:
                if line.startswith("syscr:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def floor_pass(proc):
    proc.stdin.write("scrape\n")
    proc.stdin.flush()
    if not proc.stdout.readline().startswith("ok"):
        sys.exit("rdmahd_pread_floor failed")


SYSFS_REFERENCE_GLOBS = ("/sys/class/net/*/*", "/sys/class/net/*/statistics/*", "/sys/block/*/queue/*",
                         "/sys/devices/system/cpu/cpu*/cache/index*/*", "/sys/devices/system/node/node*/*")


def sysfs_reference_lists(workdir, limit=800):
    """Up to `limit` readable sysfs attribute files of this host, and a tmpfs copy of each (same bytes);
    writes the two lists for rdmahd_pread_floor and returns their paths, or None without enough files."""
    real, copies = [], []
    copy_dir = os.path.join(workdir, "sysfs-copy")
    os.makedirs(copy_dir, exist_ok=True)
    for path in sorted(p for g in SYSFS_REFERENCE_GLOBS for p in glob.glob(g)):
        if len(real) >= limit:
            break
        try:
            if not os.path.isfile(path) or os.path.islink(path):
                continue
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
            try:
                data = os.pread(fd, 4096, 0)
            finally:
                os.close(fd)
        except OSError:
            continue  # write-only, or the driver refuses the read (EOPNOTSUPP, EINVAL)
        if not data:
            continue
        copy = os.path.join(copy_dir, f"f{len(real)}")
        with open(copy, "wb") as f:
            f.write(data)
        real.append(path)
        copies.append(copy)
    if len(real) < 100:
        return None
    lists = []
    for name, paths in (("sysfs-real.txt", real), ("sysfs-copy.txt", copies)):
        lists.append(os.path.join(workdir, name))
        with open(lists[-1], "w") as f:
            f.write("\n".join(paths) + "\n")
    return lists, len(real)


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
        return r.read()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rdma-healthd", required=True)
    ap.add_argument("--node-exporter", default=shutil.which("prometheus-node-exporter") or "prometheus-node-exporter")
    ap.add_argument("--pread-floor", help="rdmahd_pread_floor binary (default: next to --rdma-healthd)")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--scrapes", type=int, default=40)
    ap.add_argument("--spacing", type=float, default=0.3, help="seconds between scrapes (> cache window)")
    ap.add_argument("--no-ecn", action="store_true", help="netdevs without the MLNX_OFED ecn/ folders")
    ap.add_argument("--baseline", help="another rdma-healthd binary (e.g. an older build) scraped in the same rounds")
    a = ap.parse_args()
    floor_bin = a.pread_floor or os.path.join(os.path.dirname(os.path.abspath(a.rdma_healthd)), "rdmahd_pread_floor")
    if not os.access(floor_bin, os.X_OK):
        sys.exit(f"{floor_bin} not found: build the rdmahd_pread_floor target (bench/run.sh does)")

    # sysfs lives in memory: put the tree on tmpfs so neither exporter pays disk-filesystem costs
    # (page-cache lookups, atime updates) that a real /sys does not have.
    tmpfs = "/dev/shm" if os.path.isdir("/dev/shm") else None
    tree = tempfile.mkdtemp(prefix="rdmahd-bench-", dir=tmpfs)
    try:
        gen = [sys.executable, os.path.join(HERE, "gen_tree.py"), tree, "--devices", str(a.devices)]
        if a.no_ecn:
            gen.append("--no-ecn")
        out = subprocess.run(gen, check=True, capture_output=True, text=True).stdout.strip()
        print("tree:", out)
        sysfs = os.path.join(tree, "sys")
        dcb = os.path.join(tree, "dcb")
        rp, np_ = free_port(), free_port()

        def healthd(binary, port):
            return subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{port}", f"--path.sysfs={sysfs}",
                                     f"--path.dcb={dcb}", "--log.level=warn"], stderr=subprocess.DEVNULL)

        procs = {
            "rdma-healthd": (healthd(a.rdma_healthd, rp), rp),
            "node_exporter": (subprocess.Popen([a.node_exporter, "--collector.disable-defaults",
                                                "--collector.infiniband", f"--path.sysfs={sysfs}",
                                                f"--web.listen-address=127.0.0.1:{np_}", "--log.level=warn"],
                                               stderr=subprocess.DEVNULL), np_),
        }
        if a.baseline:
            bp = free_port()
            procs["baseline"] = (healthd(a.baseline, bp), bp)
        try:
            for name, (proc, port) in procs.items():
                wait_up(port, proc, name, attempt_timeout=30)
            samples = {name: [] for name in procs}
            sizes = {}
            for _ in range(3):  # warm-up: first-scrape costs (opening held files, Go runtime) excluded
                for name, (proc, port) in procs.items():
                    scrape(port)
                time.sleep(a.spacing)
            # The floor: the files rdma-healthd holds open, each read once with one pread and nothing
            # else, in a third process scraped in the same rounds.
            held = held_files(procs["rdma-healthd"][0].pid, tree)
            list_file = os.path.join(tree, "held-files.txt")
            with open(list_file, "w") as f:
                f.write("\n".join(held) + "\n")
            floor = subprocess.Popen([floor_bin, list_file], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            floor_pass(floor)
            floor_samples = []
            thread_samples = {}  # rdma-healthd's CPU per scrape by thread name
            # The same reads in a process whose descriptor table two threads share.
            floor_mt = subprocess.Popen([floor_bin, "--shared-fd-table", list_file], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)
            floor_pass(floor_mt)
            floor_mt_samples = []
            # The sysfs cost factor: this host's sysfs attributes against the same bytes on tmpfs.
            reference = sysfs_reference_lists(tree)
            ref_procs, ref_samples = {}, {"sysfs": [], "tmpfs copy": []}
            if reference:
                for name, lst in zip(ref_samples, reference[0]):
                    ref_procs[name] = subprocess.Popen([floor_bin, lst], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                       text=True)
                    floor_pass(ref_procs[name])
            reads = []
            for round_no in range(a.scrapes):
                # Each process scraped first in every other round, so that what runs just before a
                # scrape (a cache still warm or not) favours neither in the paired ratios.
                order = list(procs.items())
                for name, (proc, port) in (order if round_no % 2 == 0 else reversed(order)):
                    before = cpu_ns(proc.pid)
                    syscr = read_syscalls(proc.pid) if name == "rdma-healthd" else None
                    by_thread = cpu_ns_by_thread_name(proc.pid) if name == "rdma-healthd" else None
                    body = scrape(port)
                    time.sleep(0.05)  # let the server finish its bookkeeping after the response
                    samples[name].append(cpu_ns(proc.pid) - before)
                    if by_thread is not None:
                        for thread, ns in cpu_ns_by_thread_name(proc.pid).items():
                            thread_samples.setdefault(thread, []).append(ns - by_thread.get(thread, 0))
                    if syscr is not None:
                        reads.append(read_syscalls(proc.pid) - syscr)
                    sizes[name] = body
                before = cpu_ns(floor.pid)
                floor_pass(floor)
                time.sleep(0.05)
                floor_samples.append(cpu_ns(floor.pid) - before)
                before = cpu_ns(floor_mt.pid)
                floor_pass(floor_mt)
                time.sleep(0.02)
                floor_mt_samples.append(cpu_ns(floor_mt.pid) - before)
                for name, proc in ref_procs.items():
                    before = cpu_ns(proc.pid)
                    floor_pass(proc)
                    time.sleep(0.02)
                    ref_samples[name].append(cpu_ns(proc.pid) - before)
                time.sleep(a.spacing)
            rss = {name: proc_status_kib(proc.pid, "VmHWM") for name, (proc, _) in procs.items()}
            for proc in (floor, floor_mt, *ref_procs.values()):
                proc.stdin.close()
                proc.wait(timeout=10)
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
        hw = sizes["rdma-healthd"].count(b"rdma_port_hw_counters_total{")
        ecn = sizes["rdma-healthd"].count(b"rdma_ecn_")
        print(f"rdma-healthd exported {hw} hw_counters and {ecn} ECN series; node_exporter "
              f"{sizes['node_exporter'].count(b'hw_counter')} hw_counters series")
        floor_med = statistics.median(floor_samples)
        floor_ratio = med["rdma-healthd"] / floor_med
        if reads:
            print(f"rdma-healthd read syscalls per scrape (/proc/PID/io syscr, median): {statistics.median(reads):.0f}; "
                  f"files held: {len(held)}")
        print(f"floor: one pread of each of the {len(held)} files rdma-healthd holds: {floor_med / 1e6:.3f} ms "
              f"= {floor_med / med['node_exporter']:.3f} of node_exporter's scrape")
        print("rdma-healthd CPU per scrape by thread (means): " + ", ".join(
            f"{thread} {statistics.mean(v) / 1e6:.3f} ms" for thread, v in
            sorted(thread_samples.items(), key=lambda kv: -sum(kv[1])) if statistics.mean(v) >= 1000))
        floor_mt_med = statistics.median(floor_mt_samples)
        print(f"the same reads with a shared descriptor table (two threads): {floor_mt_med / 1e6:.3f} ms "
              f"= {floor_mt_med / floor_med:.3f} x the floor; CPU per scrape / this: "
              f"{med['rdma-healthd'] / floor_mt_med:.3f}")
        if "baseline" in med:
            print(f"baseline ({a.baseline}): CPU per scrape {med['baseline'] / med['node_exporter']:.3f} of "
                  f"node_exporter's, {med['baseline'] / floor_med:.2f} x the floor, peak RSS "
                  f"{rss['baseline'] / rss['node_exporter']:.3f} of node_exporter's")
            # Paired by round: the two builds' scrapes of one round ran back to back, so the machine's
            # drift cancels in their ratio; the median's interval says what "not slower" can rest on.
            ratios = [n / b for n, b in zip(samples["rdma-healthd"], samples["baseline"]) if b > 0]
            if len(ratios) >= 5:
                lo, hi = bootstrap_median_ci(ratios, 0.95, 10000, 1)
                print(f"CPU per scrape / baseline's, paired by round: median {statistics.median(ratios):.3f} "
                      f"(95% CI {lo:.3f} .. {hi:.3f}) over {len(ratios)} rounds")
        sysfs_factor = None
        if ref_procs:
            n = reference[1]
            per_read = {name: statistics.median(v) / n for name, v in ref_samples.items()}
            sysfs_factor = per_read["sysfs"] / per_read["tmpfs copy"]
            print(f"sysfs cost factor: {n} attribute files of this host's /sys, one pread each: "
                  f"{per_read['sysfs']:.0f} ns per read; the same bytes on tmpfs: {per_read['tmpfs copy']:.0f} ns; "
                  f"factor {sysfs_factor:.2f}")
        for what, value, target in (("CPU per scrape / floor", floor_ratio, 1.3),
                                    ("CPU per scrape / node_exporter", cpu_ratio, 0.35),
                                    ("peak RSS / node_exporter", rss_ratio, 0.5)):
            print(f"target {what:32} {value:6.3f} <= {target:<5} {'met' if value <= target else 'NOT MET'}")
        if sysfs_factor:
            sysfs_floor = floor_med * sysfs_factor
            projected = (med["rdma-healthd"] - floor_med + sysfs_floor) / sysfs_floor
            print(f"projection: with every read costing {sysfs_factor:.2f}x (a sysfs tree), CPU per scrape / floor "
                  f"would be {projected:.3f}")
    finally:
        shutil.rmtree(tree, ignore_errors=True)


if __name__ == "__main__":
    main()
