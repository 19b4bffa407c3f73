"""End-to-end tests of how each mode starts and ends: `check` and `check-config` die from SIGINT and
SIGTERM whatever they are doing; a sysfs root without an RDMA class is exit 2 for `check`, and a
metric and a log line for the daemon (which keeps serving)."""

import fcntl
import json
import os
import signal
import subprocess
import tempfile
import time
import unittest

from harness import Daemon, binary, run

PIPE_SIZE = 4096  # the smallest a pipe can be made: quick to fill


def signal_mask(pid, field):
    """The set of signal numbers in /proc/PID/status's field (SigBlk, SigIgn, ...)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                bits = int(line.split()[1], 16)
                return {n for n in range(1, 65) if bits & (1 << (n - 1))}
    raise AssertionError(f"{field} not in /proc/{pid}/status")


class InterruptTest(unittest.TestCase):
    """The command is stalled for real: its stdout is a pipe already full, so it blocks writing its
    result until someone reads. A signal must end it (it used to be blocked in every mode)."""

    def stalled(self, *args):
        r, w = os.pipe()
        self.addCleanup(os.close, r)
        fcntl.fcntl(w, fcntl.F_SETPIPE_SZ, PIPE_SIZE)
        os.set_blocking(w, False)
        try:
            while True:
                os.write(w, b"x" * PIPE_SIZE)
        except BlockingIOError:
            pass
        os.set_blocking(w, True)  # the flag is the pipe's, shared with the child
        proc = subprocess.Popen([binary(), *args], stdout=w, stderr=subprocess.DEVNULL)
        os.close(w)
        self.addCleanup(lambda: proc.poll() is None and (proc.kill(), proc.wait()))
        return proc

    def assert_dies_from(self, sig, *args):
        proc = self.stalled(*args)
        time.sleep(0.5)  # reaches the blocked write (a signal before that must end it as well)
        self.assertIsNone(proc.poll(), "exited although its stdout is full")
        self.assertFalse({signal.SIGINT, signal.SIGTERM} & signal_mask(proc.pid, "SigBlk"),
                         f"{args[0]} blocks SIGINT/SIGTERM")
        sent = time.monotonic()
        proc.send_signal(sig)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.fail(f"{args[0]} still running 5 s after {sig.name}")
        self.assertLess(time.monotonic() - sent, 5)
        self.assertEqual(proc.returncode, -sig)

    def test_check_dies_from_sigint_and_sigterm(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "class", "infiniband"))
            for sig in (signal.SIGINT, signal.SIGTERM):
                with self.subTest(sig=sig.name):
                    self.assert_dies_from(sig, "check", f"--path.sysfs={tmp}", f"--path.procfs={tmp}",
                                          f"--path.dcb={tmp}")

    def test_check_config_dies_from_sigint_and_sigterm(self):
        with tempfile.NamedTemporaryFile("w", suffix=".yaml") as cfg:
            cfg.write("scrape:\n  cache_window: 100ms\n")
            cfg.flush()
            for sig in (signal.SIGINT, signal.SIGTERM):
                with self.subTest(sig=sig.name):
                    self.assert_dies_from(sig, "check-config", cfg.name)

    def test_daemon_still_handles_them_itself(self):
        with tempfile.TemporaryDirectory() as empty:
            with Daemon(f"--path.sysfs={empty}", f"--path.procfs={empty}", f"--path.dcb={empty}") as d:
                blocked = signal_mask(d.proc.pid, "SigBlk")
                self.assertLessEqual({signal.SIGHUP, signal.SIGINT, signal.SIGTERM}, blocked)
                d.signal(signal.SIGINT)
                d.proc.wait(timeout=5)
            self.assertEqual(d.proc.returncode, 0)


class SysfsRootTest(unittest.TestCase):
    def test_check_on_a_root_without_rdma_class_exits_two_and_names_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            for root in ("/nonexistent", tmp):  # missing, and an existing tree without the class
                with self.subTest(root=root):
                    why = (f"{root}/class/infiniband does not exist: --path.sysfs={root} is not a sysfs "
                           "tree, or the RDMA core (ib_core) was not loaded where it was captured")
                    p = run("check", f"--path.sysfs={root}", f"--path.dcb={tmp}")
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn("cannot judge this node: " + why + "\n", p.stdout)
                    p = run("check", "--output=json", f"--path.sysfs={root}", f"--path.dcb={tmp}")
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    doc = json.loads(p.stdout)
                    self.assertEqual(doc["exit_code"], 2)
                    self.assertEqual(doc["problems"], [why])

    def test_daemon_keeps_serving_and_says_so(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = os.path.join(tmp, "nonexistent")
            with Daemon(f"--path.sysfs={root}", f"--path.procfs={root}", f"--path.dcb={tmp}") as d:
                status, _, body = d.get("/metrics")
            self.assertEqual(status, 200)
            self.assertIn("\nrdma_healthd_sysfs_rdma_class_present 0\n", body)
            self.assertIn("\nrdma_devices_found 0\n", body)
            lines = [l for l in d.log_lines if "no RDMA device found" in l]
            self.assertEqual(len(lines), 1, d.log_lines)
            self.assertIn(f"--path.sysfs={root} is not a sysfs tree", lines[0])

        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "class", "infiniband"))
            with Daemon(f"--path.sysfs={tmp}", f"--path.procfs={tmp}", f"--path.dcb={tmp}") as d:
                _, _, body = d.get("/metrics")
            self.assertIn("\nrdma_healthd_sysfs_rdma_class_present 1\n", body)


if __name__ == "__main__":
    unittest.main()
