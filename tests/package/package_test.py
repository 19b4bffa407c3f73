"""The .deb as operators get it: built with CPack from the build tree, then inspected.

lintian reports no error or warning; the package holds the daemon, its unit, /etc/default file,
configuration (both conffiles), alert rules, dashboard, docs and man page; the maintainer scripts
are executable; `systemd-analyze verify` accepts the unit; the packaged configuration validates;
the man page names every flag `--help` prints. The unit's behaviour under a real systemd is the VM
tier's job (tests/vm/scenarios/systemd-deb.sh).
"""

import glob
import gzip
import os
import re
import shutil
import subprocess
import tempfile
import unittest

BUILD_DIR = os.environ.get("RDMAHD_BUILD_DIR", "")
BINARY = os.environ.get("RDMAHD_BINARY", "")
UNIT = "lib/systemd/system/rdma-healthd.service"


def run(*args, **kw):
    return subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)


class DebPackageTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.isfile(os.path.join(BUILD_DIR, "CPackConfig.cmake")):
            raise RuntimeError("RDMAHD_BUILD_DIR must name a configured build tree (ctest sets it)")
        cls.tmp = tempfile.mkdtemp(prefix="rdmahd-deb-")
        p = run("cpack", "-G", "DEB", "-B", cls.tmp, cwd=BUILD_DIR)
        if p.returncode != 0:
            shutil.rmtree(cls.tmp, True)
            raise RuntimeError("cpack failed:\n" + p.stdout + p.stderr)
        debs = glob.glob(os.path.join(cls.tmp, "rdma-healthd_*.deb"))
        if len(debs) != 1:
            raise RuntimeError("expected one .deb, got %s" % debs)
        cls.deb = debs[0]
        cls.root = os.path.join(cls.tmp, "root")
        cls.control = os.path.join(cls.tmp, "control")
        subprocess.run(["dpkg-deb", "-x", cls.deb, cls.root], check=True)
        subprocess.run(["dpkg-deb", "-e", cls.deb, cls.control], check=True)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def test_lintian_reports_no_error_or_warning(self):
        p = run("lintian", "--tag-display-limit", "0", self.deb)
        tags = [l for l in p.stdout.splitlines() if re.match(r"^[EW]: ", l)]
        self.assertEqual(tags, [], p.stdout + p.stderr)

    def test_contents(self):
        for path in ("usr/sbin/rdma-healthd", UNIT, "etc/default/rdma-healthd", "etc/rdma-healthd/config.yaml",
                     "usr/share/rdma-healthd/prometheus/rdma-healthd-alerts.yml",
                     "usr/share/rdma-healthd/grafana/rdma-healthd-dashboard.json",
                     "usr/share/rdma-healthd/grafana/rdma-healthd-node-dashboard.json",
                     "usr/share/doc/rdma-healthd/copyright", "usr/share/doc/rdma-healthd/changelog.gz",
                     "usr/share/doc/rdma-healthd/checks.md", "usr/share/doc/rdma-healthd/metrics.md",
                     "usr/share/man/man8/rdma-healthd.8.gz"):
            with self.subTest(path=path):
                self.assertTrue(os.path.isfile(os.path.join(self.root, path)))
        with open(os.path.join(self.control, "conffiles")) as f:
            self.assertEqual(sorted(f.read().split()), ["/etc/default/rdma-healthd", "/etc/rdma-healthd/config.yaml"])
        for script in ("postinst", "prerm", "postrm"):
            with self.subTest(script=script):
                self.assertTrue(os.access(os.path.join(self.control, script), os.X_OK))
        with open(os.path.join(self.control, "control")) as f:
            control = f.read()
        depends = re.search(r"^Depends: (.*)$", control, re.M).group(1)
        for dep in ("adduser", "init-system-helpers", "libibverbs1"):
            self.assertIn(dep, depends)

    def test_postinst_creates_a_system_user_and_leaves_a_running_daemon_alone_on_upgrade(self):
        with open(os.path.join(self.control, "postinst")) as f:
            postinst = f.read()
        self.assertIn("adduser --system --group", postinst)
        # `configure` gets the old version as $2 on upgrade: start only when it is empty.
        self.assertRegex(postinst, r'if \[ -z "\$2" \]; then\s+deb-systemd-invoke start')
        self.assertNotRegex(postinst, r"(deb-systemd-invoke|systemctl)[^\n]*\b(try-)?restart")
        p = run("sh", "-n", os.path.join(self.control, "postinst"))
        self.assertEqual(p.returncode, 0, p.stderr)

    def unit(self):
        with open(os.path.join(self.root, UNIT)) as f:
            return f.read()

    def test_systemd_analyze_verify_accepts_the_unit(self):
        # verify checks that ExecStart exists: point it at the binary just built.
        unit_dir = tempfile.mkdtemp(prefix="rdmahd-unit-")
        self.addCleanup(shutil.rmtree, unit_dir, True)
        path = os.path.join(unit_dir, "rdma-healthd.service")
        with open(path, "w") as f:
            f.write(self.unit().replace("/usr/sbin/rdma-healthd", os.path.abspath(BINARY)))
        p = run("systemd-analyze", "verify", path)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout + p.stderr, "", "systemd-analyze printed warnings")

    def test_unit_settings(self):
        unit = self.unit()
        settings = {}
        for line in unit.splitlines():
            if "=" in line and not line.startswith("#"):
                key, value = line.split("=", 1)
                settings.setdefault(key, []).append(value)
        self.assertEqual(settings["Type"], ["notify"])
        self.assertIn("WatchdogSec", settings)
        self.assertEqual(settings["ExecReload"], ["/bin/kill -HUP $MAINPID"])
        self.assertEqual(settings["User"], ["rdma-healthd"])
        self.assertEqual(settings["EnvironmentFile"], ["-/etc/default/rdma-healthd"])
        self.assertTrue(settings["ExecStart"][0].endswith("$ARGS"))
        self.assertEqual(settings["AmbientCapabilities"], ["CAP_IPC_LOCK CAP_SYSLOG"])
        self.assertEqual(settings["CapabilityBoundingSet"], ["CAP_IPC_LOCK CAP_SYSLOG"])
        # /dev/kmsg (nic_health) stays reachable: no ProtectKernelLogs=, and the device allowed.
        self.assertNotIn("ProtectKernelLogs", settings)
        self.assertIn("/dev/kmsg r", settings["DeviceAllow"])
        self.assertEqual(settings["LimitMEMLOCK"], ["infinity"])
        self.assertGreaterEqual(int(settings["LimitNOFILE"][0]), 8192)
        self.assertIn("AF_NETLINK", settings["RestrictAddressFamilies"][0])
        for key in ("ProtectSystem", "ProtectHome", "PrivateTmp", "NoNewPrivileges"):
            self.assertIn(key, settings)
        self.assertTrue(any("infiniband" in d for d in settings["DeviceAllow"]))

    def test_packaged_config_validates(self):
        p = run(BINARY, "check-config", os.path.join(self.root, "etc/rdma-healthd/config.yaml"))
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_man_page_names_every_flag(self):
        p = run(BINARY, "--help")
        flags = set(re.findall(r"(--[a-z][a-z0-9.-]+)", p.stdout))
        flags = {f for f in flags if not re.match(r"--(no-)?collector\.", f)}  # named as a pattern
        flags -= {"--help", "--version", "--check-config"}  # --check-config: the subcommand's alias
        self.assertGreater(len(flags), 5)
        with gzip.open(os.path.join(self.root, "usr/share/man/man8/rdma-healthd.8.gz"), "rt") as f:
            page = f.read().replace("\\-", "-").replace("\\fR", "").replace("\\fI", "").replace("\\fB", "")
        missing = sorted(f for f in flags if f not in page)
        self.assertEqual(missing, [], "flags of --help missing from the man page")


if __name__ == "__main__":
    unittest.main()
