"""End-to-end: the error-rate checks on a captured tree whose counters the test moves between
collections (written in place, as the kernel's values change under the same files). The daemon's
verdict goes failed when a counter rises, stays failed for the configured hold once the increase
has left the window, then ok; `check --sample-interval` takes two samples and judges the same."""

import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

from harness import SOURCE_DIR, Daemon, binary

EMPTY_DCB = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")
MLX5_ROCE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "mlx5-roce", "sys")

# The shortest window the config takes, and a short hold, so that the test sees both end.
CONFIG = """
scrape: {cache_window: 0}
host:
  error_rates: {window: 10s, hold: 3s}
"""


def counter_path(sysfs, device, name):
    dev = os.path.realpath(os.path.join(sysfs, "class", "infiniband", device))
    return os.path.join(dev, "ports", "1", "counters", name)


def bump(path, by):
    """Rewrites the counter in place (same inode: a held descriptor sees the new value)."""
    with open(path, "r+") as f:
        value = int(f.read().strip()) + by
        f.seek(0)
        f.truncate()
        f.write(f"{value}\n")


class ErrorRatesTreeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.sysfs = os.path.join(self.tmp.name, "sys")
        shutil.copytree(MLX5_ROCE, self.sysfs, symlinks=True)
        self.config = os.path.join(self.tmp.name, "config.yaml")
        with open(self.config, "w") as f:
            f.write(CONFIG)
        self.args = [f"--path.sysfs={self.sysfs}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}",
                     f"--config.file={self.config}"]

    def tearDown(self):
        self.tmp.cleanup()

    def verdict(self, daemon, check, subject):
        status, _, body = daemon.get("/api/v1/checks")
        self.assertEqual(status, 200)
        for v in json.loads(body)["verdicts"]:
            if v["check"] == check and v["subject"] == subject:
                return v
        self.fail(f"no {check} verdict for {subject}: {body[:2000]}")

    def test_daemon_fails_on_a_rising_counter_holds_then_recovers(self):
        overrun = counter_path(self.sysfs, "mlx5_0", "excessive_buffer_overrun_errors")
        with Daemon(*self.args) as d:
            # Ready after its first collection: this scrape is the second sample, nothing moved.
            v = self.verdict(d, "port_errors", "mlx5_0/1")
            self.assertEqual(v["status"], "ok", v)
            bump(overrun, 2)
            v = self.verdict(d, "port_errors", "mlx5_0/1")
            self.assertEqual(v["status"], "failed", v)
            self.assertRegex(v["reason"], r"^excessive_buffer_overrun_errors \+2 in [\d.]+ s: the port's receive buffer")
            self.assertIn("link partner", v["fix"])
            _, _, metrics = d.get("/metrics")
            self.assertIn('rdma_check_status{check="port_errors",subject="mlx5_0/1",status="failed"} 1', metrics)
            # The other device's counters did not move.
            self.assertEqual(self.verdict(d, "port_errors", "mlx5_1/1")["status"], "ok")
            # Past the 10 s window the increase is gone; the verdict is held for 3 s more, then ok.
            seen = []
            deadline = time.monotonic() + 40
            while time.monotonic() < deadline:
                v = self.verdict(d, "port_errors", "mlx5_0/1")
                if not seen or seen[-1][0] != v["status"] or "held" in v["reason"] and "held" not in seen[-1][1]:
                    seen.append((v["status"], v["reason"]))
                if v["status"] == "ok":
                    break
                time.sleep(0.5)
            self.assertEqual(seen[-1][0], "ok", seen)
            held = [r for s, r in seen if s == "failed" and "held failed for 3 s" in r]
            self.assertTrue(held, seen)
            self.assertRegex(held[0], r"^excessive_buffer_overrun_errors was over its limit until [\d.]+ s ago")

    def test_check_with_a_sample_interval_judges_the_increase(self):
        # Counters at 0 counted nothing since they were cleared: judged from one collection. A
        # non-zero one needs a second.
        symbol = counter_path(self.sysfs, "mlx5_1", "symbol_error")
        bump(symbol, 7)
        once = subprocess.run([binary(), "check", *self.args], capture_output=True, text=True, timeout=60)
        self.assertRegex(once.stdout, r"port_errors +mlx5_0/1 +ok +no error counter over its limit")
        self.assertRegex(once.stdout, r"port_errors +mlx5_1/1 +unknown +no increase known yet for symbol_error: a "
                                      r"rate needs two samples .*; counted since the last clear: symbol_error \d+")
        proc = subprocess.Popen([binary(), "check", "--sample-interval=4s", *self.args], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            time.sleep(2)  # after the first collection, before the second
            bump(symbol, 500)
            out, err = proc.communicate(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        self.assertEqual(proc.returncode, 1, out + err)
        self.assertRegex(out, r"port_errors +mlx5_1/1 +failed +symbol_error \+500 in [45] s, more than 120 within an hour")
        self.assertRegex(out, r"port_errors +mlx5_0/1 +ok ")


if __name__ == "__main__":
    unittest.main()
