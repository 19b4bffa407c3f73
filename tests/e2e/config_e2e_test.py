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


# Files that are not configs, made here (never the machine's real ones).
PEM_SECRET = "MIIEowIBAAKCAQEAu7Qz9sEcReTpAyLoAdSecretBody"
PEM_TEXT = ("-----BEGIN OPENSSH PRIVATE KEY-----\n" + PEM_SECRET + "\n"
            "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
            "-----END OPENSSH PRIVATE KEY-----\n")
SHADOW_SALT = "j9T$Qx7Sa1tPepper"
SHADOW_HASH = "Hq2v8ZgMmS3cr3tH4shV4lue"
SHADOW_TEXT = ("root:$y$" + SHADOW_SALT + "$" + SHADOW_HASH + ":19000:0:99999:7:::\n"
               "daemon:*:19000:0:99999:7:::\n")
SECRETS = (PEM_SECRET, "b3BlbnNzaC1rZXkt", "PRIVATE KEY", SHADOW_SALT, SHADOW_HASH, "root:", "$y$")


class ErrorsDoNotPrintTheFileTest(unittest.TestCase):
    """check-config, the daemon's start-up and a SIGHUP reload on a private key or a shadow file name
    the file, the line and column and what is wrong, and print none of the file."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)

    def write(self, name, text):
        path = os.path.join(self.tmp.name, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    def assert_no_secret(self, text):
        for secret in SECRETS:
            self.assertNotIn(secret, text)

    def test_check_config_on_a_private_key(self):
        path = self.write("id_ed25519", PEM_TEXT)
        p = run("check-config", path, timeout=PROMPT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(path + ":1:1: not a YAML mapping: the file is one scalar of", p.stderr)
        self.assert_no_secret(p.stderr + p.stdout)

    def test_check_config_on_a_shadow_file(self):
        path = self.write("shadow", SHADOW_TEXT)
        p = run("check-config", path, timeout=PROMPT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(path + ":1:1: unknown key (a key of ", p.stderr)
        self.assertIn("not shown", p.stderr)
        self.assert_no_secret(p.stderr + p.stdout)

    def test_web_config_file_on_a_private_key_or_shadow_file(self):
        for name, text, needle in (("key.pem", PEM_TEXT, ":1:1: not a YAML mapping"),
                                   ("shadow", SHADOW_TEXT, ":1:1: unknown key (a key of ")):
            path = self.write(name, text)
            p = run(f"--web.config.file={path}", "--web.listen-address=127.0.0.1:0",
                    f"--path.sysfs={self.tmp.name}", timeout=PROMPT)
            self.assertNotEqual(p.returncode, 0, p.stderr)
            self.assertIn(path + needle, p.stderr)
            self.assert_no_secret(p.stderr + p.stdout)

    def test_reload_onto_a_shadow_file_logs_no_secret(self):
        cfg = self.write("config.yaml", "ports:\n  min_rate_gbps: 100\n")
        with Daemon(f"--config.file={cfg}", f"--path.sysfs={self.tmp.name}") as d:
            with open(cfg, "w") as f:
                f.write(SHADOW_TEXT)
            d.signal(signal.SIGHUP)
            line = d.wait_for_log("reload failed", timeout=5)
            self.assertIsNotNone(line, "\n".join(d.log_lines))
            self.assertIn(cfg + ":1:1: unknown key (a key of ", line)
            _, _, body = d.get("/metrics")
            self.assertIn("rdma_healthd_config_last_reload_successful 0", body)
        self.assert_no_secret("\n".join(d.log_lines))

    def test_odd_bytes_are_named_with_their_position(self):
        for text, needle in (("roce:\r  priority: 3\r", ":1:6: a carriage return (CR) not followed by a line feed"),
                             ("roce:\n  prio\0rity: 3\n", ":2:7: a NUL byte"),
                             ("roce:\n\tpriority: 3\n", ":2:1: a tab in the indentation"),
                             ("roce:\n  priority: \"\udcff\"\n", ":2:14: invalid UTF-8 (byte 0xFF)")):
            path = os.path.join(self.tmp.name, "odd.yaml")
            with open(path, "w", encoding="utf-8", errors="surrogateescape", newline="") as f:
                f.write(text)
            p = run("check-config", path, timeout=PROMPT)
            self.assertEqual(p.returncode, 2, p.stderr)
            self.assertIn(path + needle, p.stderr)

    def test_a_1mb_key_gives_a_short_message(self):
        path = self.write("big-key.yaml", "? " + "k" * 1_000_000 + "\n: 1\n")
        p = run("check-config", path, timeout=PROMPT)
        self.assertEqual(p.returncode, 2, p.stderr)
        self.assertIn(path + ":1:3: unknown key (a key of 1000000 bytes, not shown", p.stderr)
        self.assertLess(len(p.stderr), 600)


class FileCutMidWriteTest(unittest.TestCase):
    """A file that ends right after a key with no value (cut mid-write) is refused, naming the
    key's line: check-config fails, and a reload keeps the running config."""

    def test_check_config_names_the_line_and_key(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "config.yaml")
            for text, needle in (("ports:\n  require_active: true\nroce:", ":3:1: roce: has no value"),
                                 ("roce:\n  priority:", ":2:3: roce.priority: has no value")):
                with open(path, "w") as f:
                    f.write(text)
                p = run("check-config", path, timeout=PROMPT)
                self.assertEqual(p.returncode, 2, p.stderr)
                self.assertIn(path + needle + ", and nothing follows it in the file (a file cut mid-write?)",
                              p.stderr)

    def test_reload_onto_a_cut_file_keeps_the_running_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as f:
                f.write("collectors:\n  pcie: false\n")
            with Daemon(f"--config.file={cfg}", f"--path.sysfs={tmp}") as d:
                self.assertIn("pcie (disabled)", d.get("/")[2])
                with open(cfg, "w") as f:
                    f.write("collectors:\n  pcie:")
                d.signal(signal.SIGHUP)
                line = d.wait_for_log("reload failed", timeout=5)
                self.assertIsNotNone(line, "\n".join(d.log_lines))
                self.assertIn(cfg + ":2:3: collectors.pcie: has no value", line)
                self.assertIn("pcie (disabled)", d.get("/")[2])
                _, _, body = d.get("/metrics")
                self.assertIn("rdma_healthd_config_last_reload_successful 0", body)


class FileWithNoSettingsTest(unittest.TestCase):
    """An emptied or all-commented file is not a silent switch to the defaults."""

    def test_check_config_warns_and_passes(self):
        with tempfile.TemporaryDirectory() as tmp:
            for text in ("", "# roce:\n#   priority: 3\n"):
                path = os.path.join(tmp, "config.yaml")
                with open(path, "w") as f:
                    f.write(text)
                p = run("check-config", path, timeout=PROMPT)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn(path + ": OK", p.stdout)
                self.assertIn("warning: " + path + ": the file has no settings", p.stderr)
            with open(path, "w") as f:
                f.write("{}\n")
            p = run("check-config", path, timeout=PROMPT)
            self.assertEqual((p.returncode, p.stderr), (0, ""))

    def test_reload_onto_a_comments_only_file_keeps_the_running_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as f:
                f.write("collectors:\n  pcie: false\n")
            with Daemon(f"--config.file={cfg}", f"--path.sysfs={tmp}") as d:
                self.assertIn("pcie (disabled)", d.get("/")[2])
                with open(cfg, "w") as f:
                    f.write("# collectors:\n#   pcie: false\n")
                d.signal(signal.SIGHUP)
                line = d.wait_for_log("reload failed", timeout=5)
                self.assertIsNotNone(line, "\n".join(d.log_lines))
                self.assertIn("has no settings", line)
                self.assertIn("pcie (disabled)", d.get("/")[2])
                _, _, body = d.get("/metrics")
                self.assertIn("rdma_healthd_config_last_reload_successful 0", body)
                # "{}" asks for the built-in defaults on purpose: that reloads.
                with open(cfg, "w") as f:
                    f.write("{}\n")
                d.signal(signal.SIGHUP)
                self.assertIsNotNone(d.wait_for_log("configuration reloaded", timeout=5), "\n".join(d.log_lines))
                self.assertNotIn("pcie (disabled)", d.get("/")[2])
                _, _, body = d.get("/metrics")
                self.assertIn("rdma_healthd_config_last_reload_successful 1", body)


if __name__ == "__main__":
    unittest.main()
