#!/usr/bin/env python3
"""What a large peers.file costs the daemon while an orchestrator keeps rewriting it.

Starts rdma-healthd (loopback only, an empty --path.sysfs) with a peers.file of TARGETS targets
(Prometheus file_sd JSON or YAML, 40 targets per group, each group with its own `tor` label), rewrites the
file RATE times a second for SECONDS seconds (write to a temporary name, then rename, as config
managers do), and prints the daemon's CPU time over that window as a share of one core, the
probe thread's share, and how many distinct versions of the file the daemon took in. Every
rewrite changes one target unless --same (byte-identical rewrites). Peers are probed once an hour,
so the figures are the file's cost, not the probes'.

  bench/targets_file_churn.py --rdma-healthd build/rdma-healthd [--targets 100000] [--rate 50]
                              [--seconds 20] [--same] [--format json|yaml]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import free_port, stop, wait_up  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(stat_path):
    with open(stat_path) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS  # utime, stime


def probe_thread_stat(pid):
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                if f.read().strip() == "probe-peers":
                    return f"/proc/{pid}/task/{tid}/stat"
        except OSError:
            pass
    return None


def file_text(targets, fmt):
    """(head, tail): the file is head + one changing target + tail."""
    groups = []
    for g in range(0, targets, 40):
        members = ["10.%d.%d.%d" % (i >> 16 & 255, i >> 8 & 255, i & 255) for i in range(g, min(g + 40, targets))]
        if fmt == "json":
            groups.append('{"targets": [%s], "labels": {"tor": "t%d"}}' % (", ".join('"%s"' % m for m in members), g // 40))
        else:
            groups.append("- labels: {tor: t%d}\n  targets:\n%s" % (g // 40, "".join("  - %s\n" % m for m in members)))
    if fmt == "json":
        text = "[\n" + ",\n".join(groups) + "\n]\n"
        at = text.rindex('"targets": [') + len('"targets": [')
    else:
        text = "".join(groups)
        at = text.rindex("  targets:\n") + len("  targets:\n")
    return text[:at], text[at:]


def version(head, tail, n, fmt):
    changing = "172.16.%d.%d" % (n >> 8 & 255, n & 255)
    return head + ('"%s", ' % changing if fmt == "json" else "  - %s\n" % changing) + tail


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rdma-healthd", required=True)
    ap.add_argument("--targets", type=int, default=100000)
    ap.add_argument("--rate", type=float, default=50)
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--warmup", type=float, default=5)
    ap.add_argument("--same", action="store_true", help="rewrite the same bytes every time")
    ap.add_argument("--format", choices=["json", "yaml"], default="json",
                    help="file_sd JSON (flow style) or YAML block style, one target a line")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="rdmahd-churn-") as tmp:
        peers = os.path.join(tmp, "peers." + args.format)
        cfg = os.path.join(tmp, "config.yaml")

        def write(text):
            with open(peers + ".new", "w") as f:
                f.write(text)
            os.replace(peers + ".new", peers)

        head, tail = file_text(args.targets, args.format)
        write(version(head, tail, 0, args.format))
        with open(cfg, "w") as f:
            f.write(f"peers:\n  file: {os.path.basename(peers)}\n  interval: 1h\n  step_timeout: 100ms\n  latency_iterations: 5\n")
        port = free_port()
        log = open(os.path.join(tmp, "daemon.log"), "w")
        proc = subprocess.Popen([args.rdma_healthd, f"--config.file={cfg}", f"--path.sysfs={tmp}",
                                 f"--web.listen-address=127.0.0.1:{port}", "--log.format=text"],
                                stdout=subprocess.DEVNULL, stderr=log)
        try:
            wait_up(port, proc, "rdma-healthd", 5)
            time.sleep(args.warmup)  # the first read of the file
            stop = threading.Event()
            writes = [0]

            def writer():
                period = 1 / args.rate
                next_at = time.monotonic()
                while not stop.is_set():
                    write(version(head, tail, 0 if args.same else writes[0] + 1, args.format))
                    writes[0] += 1
                    next_at += period
                    time.sleep(max(0, next_at - time.monotonic()))

            stat = f"/proc/{proc.pid}/stat"
            thread_stat = probe_thread_stat(proc.pid)
            cpu0 = cpu_seconds(stat)
            thread0 = cpu_seconds(thread_stat) if thread_stat else 0
            t0 = time.monotonic()
            w = threading.Thread(target=writer)
            w.start()
            time.sleep(args.seconds)
            cpu1 = cpu_seconds(stat)
            thread1 = cpu_seconds(thread_stat) if thread_stat else 0
            wall = time.monotonic() - t0
            stop.set()
            w.join()
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30) as r:
                body = r.read().decode()
            peers_now = len(set(re.findall(r'^rdma_peer_probes_total\{peer="([^"]+)"', body, re.M)))
            result = {
                "targets": args.targets,
                "file_bytes": os.path.getsize(peers),
                "rewrites_per_second": round(writes[0] / wall, 1),
                "format": args.format,
                "same_bytes": args.same,
                "seconds": round(wall, 1),
                "daemon_cpu_percent_of_a_core": round(100 * (cpu1 - cpu0) / wall, 1),
                "probe_thread_cpu_percent_of_a_core": round(100 * (thread1 - thread0) / wall, 1) if thread_stat else None,
                "peers_probed": peers_now,
            }
            print(json.dumps(result))
        finally:
            stop(proc)
            log.close()


if __name__ == "__main__":
    main()
