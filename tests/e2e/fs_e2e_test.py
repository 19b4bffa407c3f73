"""End-to-end tests of how the built daemon and `check` read trees: bad files cost one value, never
a device, a verdict or the scrape; captured trees are read inside their root; the open-file limit
changes costs, never results. Each test makes its own tree in a temporary folder."""

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

from harness import SOURCE_DIR, Daemon, binary, mask, promtool_check, run

EMPTY_DCB = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")
DEGRADED = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "degraded", "sys")
MLX5_ROCE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "mlx5-roce", "sys")


def tree_args(sysfs):
    return [f"--path.sysfs={sysfs}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}"]


def copy_tree(src, tmp):
    dst = os.path.join(tmp, "sys")
    shutil.copytree(src, dst, symlinks=True)
    return dst


def device_dirs(sysfs):
    base = os.path.join(sysfs, "class", "infiniband")
    return {d: os.path.realpath(os.path.join(base, d)) for d in sorted(os.listdir(base))}


def scrape_bytes(daemon):
    import urllib.request
    with urllib.request.urlopen(f"http://127.0.0.1:{daemon.port}/metrics", timeout=10) as r:
        return r.read()


class DanglingSymlinkTest(unittest.TestCase):
    def test_check_still_fails_a_down_port_when_counters_hold_a_dangling_symlink(self):
        want = run("check", *tree_args(DEGRADED))
        self.assertEqual(want.returncode, 1, want.stdout + want.stderr)
        with tempfile.TemporaryDirectory() as tmp:
            sysfs = copy_tree(DEGRADED, tmp)
            # One dangling symlink in a counter folder of every port of every device.
            for dev, real in device_dirs(sysfs).items():
                for port in os.listdir(os.path.join(real, "ports")):
                    for folder in ("counters", "hw_counters"):
                        d = os.path.join(real, "ports", port, folder)
                        if os.path.isdir(d):
                            os.symlink("../../../../nowhere/gone", os.path.join(d, "zz_dangling"))
                            break
            got = run("check", *tree_args(sysfs))
            self.assertEqual(got.returncode, 1, got.stdout + got.stderr)
            # Every verdict is the same (the dangling files were never named counters).
            self.assertEqual(got.stdout, want.stdout)
            with Daemon(*tree_args(sysfs), "--log.level=debug") as d:
                status, _, body = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertIn('rdma_port_state_id{device="mlx5_1",port="1"} 1', body)
                # Each dangling file is one error of the devices collector, named in the log.
                self.assertRegex(body, r'rdma_healthd_collector_errors\{collector="devices"\} [1-9]')
                self.assertIsNotNone(d.wait_for_log(r"zz_dangling", timeout=5, start=0))


class FifoCounterTest(unittest.TestCase):
    def test_a_fifo_counter_file_does_not_block_check(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs = copy_tree(MLX5_ROCE, tmp)
            real = device_dirs(sysfs)["mlx5_0"]
            os.mkfifo(os.path.join(real, "ports", "1", "hw_counters", "out_of_buffer_fifo"))
            os.unlink(os.path.join(real, "fw_ver"))
            os.mkfifo(os.path.join(real, "fw_ver"))
            start = time.monotonic()
            p = run("check", "--output=json", *tree_args(sysfs), timeout=20)
            self.assertLess(time.monotonic() - start, 10)
            self.assertIn("not a regular file (a FIFO)", p.stdout)
            self.assertIn(p.returncode, (0, 1), p.stderr)


class UnreadableFilesTest(unittest.TestCase):
    """A file the daemon needs and cannot read is a warning naming it, logged when it starts failing
    and not again while it keeps failing; a device folder it may not read (mode 000, daemon
    unprivileged) gives port verdicts that say so instead of no port verdicts."""

    def test_an_unreadable_counter_is_one_warning_naming_it(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs = copy_tree(MLX5_ROCE, tmp)
            counter = os.path.join(device_dirs(sysfs)["mlx5_0"], "ports", "1", "counters", "port_rcv_data")
            os.unlink(counter)
            os.mkdir(counter)  # EISDIR stands in for EACCES, which root never gets
            with Daemon(*tree_args(sysfs)) as d:
                line = d.wait_for_log(r"level=warn .*collector could not read a value", timeout=20, start=0)
                for _ in range(4):
                    self.assertEqual(d.get("/metrics")[0], 200)
                    time.sleep(0.3)  # past the scrape cache window: every scrape collects
            self.assertIsNotNone(line, "\n".join(d.log_lines))
            self.assertIn("port_rcv_data", line)
            warned = [l for l in d.log_lines if "port_rcv_data" in l]
            self.assertEqual(len(warned), 1, "\n".join(d.log_lines))

    def test_an_unreadable_device_folder_gives_unknown_port_verdicts(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.chmod(tmp, 0o755)  # the unprivileged user must reach the tree
            sysfs = copy_tree(MLX5_ROCE, tmp)
            locked = device_dirs(sysfs)["mlx5_0"]
            os.chmod(locked, 0)
            try:
                cmd = [binary(), "check", *tree_args(sysfs)]
                if os.geteuid() == 0:  # root reads a mode-000 folder: run as nobody, as the daemon would be
                    cmd = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *cmd]
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            finally:
                os.chmod(locked, 0o755)
        if "setpriv" in cmd[0] and "setpriv:" in p.stderr:
            self.skipTest("cannot drop to nobody: " + p.stderr.strip())
        self.assertRegex(p.stdout, r"(?m)^port_active +mlx5_0 +unknown +ports unknown, none could be listed: "
                                   r".*mlx5_0/ports: Permission denied$", p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"(?m)^port_active +mlx5_1/1 +ok ", p.stdout)


class Utf8Test(unittest.TestCase):
    def test_invalid_utf8_in_fw_ver_and_a_counter_name_is_promtool_clean(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs = copy_tree(MLX5_ROCE, tmp)
            real = device_dirs(sysfs)["mlx5_0"]
            with open(os.path.join(real, "fw_ver"), "wb") as f:
                f.write(b"16.35.\xff\xc3\n")
            hw = os.fsencode(os.path.join(real, "ports", "1", "hw_counters"))
            with open(hw + b"/rx_\xe9t\xed\xa0\x80", "wb") as f:
                f.write(b"7\n")
            with Daemon(*tree_args(sysfs)) as d:
                raw = scrape_bytes(d)
                body = raw.decode("utf-8")  # strict: raises on one invalid byte
                ok, out = promtool_check(body)
                self.assertTrue(ok, out)
                self.assertTrue('firmware_version="16.35.\ufffd\ufffd"' in body, "fw_ver label not replaced")
                self.assertTrue('counter="rx_\ufffdt\ufffd\ufffd\ufffd"} 7' in body, "counter label not replaced")
            out = subprocess.run([binary(), "check", "--output=json", *tree_args(sysfs)],
                                 capture_output=True, timeout=60).stdout.decode("ascii")  # strict: JSON is ASCII
            reasons = [v["reason"] for v in json.loads(out)["verdicts"] if v["check"] == "firmware_version"]
            self.assertTrue(any("16.35.\ufffd\ufffd" in r for r in reasons), reasons)


class ContainmentTest(unittest.TestCase):
    def test_a_symlinked_fw_ver_does_not_export_a_host_file(self):
        with tempfile.TemporaryDirectory() as tmp:
            secret = os.path.join(tmp, "secret")
            with open(secret, "w") as f:
                f.write("hunter2-private\n")
            sysfs = copy_tree(MLX5_ROCE, tmp)
            devs = device_dirs(sysfs)
            os.unlink(os.path.join(devs["mlx5_0"], "fw_ver"))
            os.symlink(secret, os.path.join(devs["mlx5_0"], "fw_ver"))  # absolute, outside
            os.unlink(os.path.join(devs["mlx5_1"], "fw_ver"))
            os.symlink("../" * 12 + secret.lstrip("/"), os.path.join(devs["mlx5_1"], "fw_ver"))  # ".." out
            with Daemon(*tree_args(sysfs), "--log.level=debug") as d:
                status, _, body = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertTrue("hunter2" not in body, "a host file was exported")
                self.assertIn('rdma_device_info{device="mlx5_0"', body)  # the device stays
                line = d.wait_for_log(r"fw_ver: resolves outside the root", timeout=5, start=0)
                self.assertIsNotNone(line, "\n".join(d.log_lines[-20:]))
            p = run("check", "--output=json", *tree_args(sysfs))
            self.assertNotIn("hunter2", p.stdout + p.stderr)


class OpenFileLimitTest(unittest.TestCase):
    """16 generated devices x 2 ports (~2,750 files) under nofile 256 and 1024: the same verdicts,
    exit code and values as under the runner's own limit."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "gen_tree.py"), cls.tmp.name,
                        "--devices", "16"], check=True, capture_output=True, timeout=120)
        cls.sysfs = os.path.join(cls.tmp.name, "sys")
        # One DOWN port, so the exit code says something.
        with open(os.path.join(cls.sysfs, "class", "infiniband", "mlx5_15", "ports", "2", "state"), "w") as f:
            f.write("1: DOWN\n")

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_check_under_a_low_nofile_limit_gives_the_same_verdicts(self):
        want = run("check", *tree_args(self.sysfs))
        self.assertEqual(want.returncode, 1, want.stderr)
        self.assertIn("mlx5_15/2", want.stdout)
        for limit in (256, 1024):
            with self.subTest(nofile=limit):
                got = subprocess.run(["prlimit", f"--nofile={limit}:{limit}", binary(), "check",
                                      *tree_args(self.sysfs)], capture_output=True, text=True, timeout=60)
                self.assertEqual(got.returncode, want.returncode, got.stderr)
                self.assertEqual(got.stdout, want.stdout)

    def test_daemon_under_a_low_nofile_limit_serves_the_same_values(self):
        held = re.compile(r"^(rdma_healthd_held_files|rdma_healthd_held_files_budget|"
                          r"rdma_healthd_unheld_reads_total) ")

        def values(body):
            return "\n".join(l for l in mask(body).splitlines() if not held.match(l))

        with Daemon(*tree_args(self.sysfs)) as d:
            _, _, want = d.get("/metrics")
        m = re.search(r"^rdma_healthd_held_files (\d+)", want, re.M)
        self.assertGreater(int(m.group(1)), 2000)
        d = Daemon(*tree_args(self.sysfs))
        d.args = ["prlimit", "--nofile=256:256", *d.args]
        with d:
            for _ in range(2):  # discovery, then the steady state
                status, _, got = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertEqual(values(got), values(want))
            self.assertRegex(got, r"(?m)^rdma_healthd_held_files_budget 0$")
            self.assertRegex(got, r"(?m)^rdma_healthd_held_files 0$")
            self.assertRegex(got, r"(?m)^rdma_healthd_unheld_reads_total [1-9]\d*$")
            budget_lines = [l for l in d.log_lines if "held-file budget used up" in l]
            self.assertEqual(len(budget_lines), 1, "\n".join(d.log_lines[-10:]))


if __name__ == "__main__":
    unittest.main()
