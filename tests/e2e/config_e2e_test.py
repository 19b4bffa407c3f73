"""End-to-end tests of config loading hardening: paths that are not config files, hostile patterns
and YAML, through check-config, check and a SIGHUP reload of the running daemon. Every command is
bounded: a hang is a failure (subprocess timeout), never a stuck suite."""

import os
import signal
import tempfile
import time
import unittest

from harness import Daemon, run

# A refusal must be prompt; the bound is generous for a loaded machine, far below "hung".
PROMPT = 10


class NotAConfigFileTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def assert_refused(self, p, *needles):
        self.assertEqual(p.returncode, 2, p.stderr)  # not a signal (negative), not a crash
        for n in needles:
            self.assertIn(n, p.stderr)
        for bad in ("terminate called", "what():", "Aborted", "bad_alloc"):
            self.assertNotIn(bad, p.stderr)

    def fifo(self):
        path = os.path.join(self.tmp.name, "fifo.yaml")
        os.mkfifo(path)
        return path

    def test_dev_zero(self):
        self.assert_refused(run("check-config", "/dev/zero", timeout=PROMPT),
                            "/dev/zero: is a character device, not a regular file")

    def test_fifo_with_no_writer_returns_promptly(self):
        path = self.fifo()
        start = time.monotonic()
        self.assert_refused(run("check-config", path, timeout=PROMPT), path + ": is a FIFO, not a regular file")
        self.assertLess(time.monotonic() - start, 5)
        # `check` loads the same way.
        p = run("check", f"--config.file={path}", f"--path.sysfs={self.tmp.name}", timeout=PROMPT)
        self.assert_refused(p, path + ": is a FIFO")

    def test_directory(self):
        self.assert_refused(run("check-config", self.tmp.name, timeout=PROMPT),
                            self.tmp.name + ": is a directory, not a regular file")

    def test_50mb_sparse_file(self):
        path = os.path.join(self.tmp.name, "huge.yaml")
        with open(path, "w") as f:
            f.truncate(50 << 20)
        self.assert_refused(run("check-config", path, timeout=PROMPT),
                            path + ": is 52428800 bytes; a config file may hold at most 1 MiB")

    def test_daemon_refuses_to_start_on_a_fifo(self):
        path = self.fifo()
        p = run(f"--config.file={path}", "--web.listen-address=127.0.0.1:0", timeout=PROMPT)
        self.assert_refused(p, path + ": is a FIFO")

    def test_20000_nested_groups(self):
        path = os.path.join(self.tmp.name, "regex.yaml")
        with open(path, "w") as f:
            f.write("devices:\n  include: ['" + "(" * 20000 + "a" + ")" * 20000 + "']\n")
        self.assert_refused(run("check-config", path, timeout=PROMPT),
                            path + ":2:13: devices.include[0]: invalid regular expression",
                            "longer than 4096 characters")

    def test_unclosed_flow_points_at_its_bracket(self):
        path = os.path.join(self.tmp.name, "flow.yaml")
        with open(path, "w") as f:
            f.write("devices:\n  include: [mlx5_0,\n    mlx5_1\nroce: {priority: 3}\n")
        self.assert_refused(run("check-config", path, timeout=PROMPT),
                            path + ":2:12: invalid YAML: this flow sequence '[' is never closed")


class ReloadOntoNotAConfigFileTest(unittest.TestCase):
    """SIGHUP with the config path replaced by a FIFO or a huge file: the reload fails at once, the
    old config stays, and the daemon keeps answering and handling signals."""

    def reload_onto(self, make_bad):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as f:
                f.write("ports:\n  min_rate_gbps: 100\n")
            with Daemon(f"--config.file={cfg}", f"--path.sysfs={tmp}") as d:
                try:
                    os.unlink(cfg)
                    needle = make_bad(cfg)
                    d.signal(signal.SIGHUP)
                    line = d.wait_for_log("reload failed", timeout=5)
                    self.assertIsNotNone(line, "\n".join(d.log_lines))
                    self.assertIn(needle, line)
                    self.assertEqual(d.get("/-/healthy")[0], 200)
                    status, _, body = d.get("/metrics")
                    self.assertEqual(status, 200)
                    self.assertIn("rdma_healthd_config_last_reload_successful 0", body)

                    # The signal loop is free: a good file reloads.
                    os.unlink(cfg)
                    with open(cfg, "w") as f:
                        f.write("ports:\n  min_rate_gbps: 25\n")
                    d.signal(signal.SIGHUP)
                    self.assertIsNotNone(d.wait_for_log("configuration reloaded", timeout=5),
                                         "\n".join(d.log_lines))
                    _, _, body = d.get("/metrics")
                    self.assertIn("rdma_healthd_config_last_reload_successful 1", body)
                finally:
                    # Before the fix the daemon sits in open() on the FIFO: a writer lets it go, so
                    # the daemon can stop.
                    if os.path.exists(cfg) and not os.path.isfile(cfg):
                        try:
                            os.close(os.open(cfg, os.O_WRONLY | os.O_NONBLOCK))
                        except OSError:
                            pass

    def test_reload_onto_a_fifo(self):
        def make(cfg):
            os.mkfifo(cfg)
            return cfg + ": is a FIFO, not a regular file"
        self.reload_onto(make)

    def test_reload_onto_a_50mb_file(self):
        def make(cfg):
            with open(cfg, "w") as f:
                f.truncate(50 << 20)
            return "a config file may hold at most 1 MiB"
        self.reload_onto(make)


if __name__ == "__main__":
    unittest.main()
