"""End-to-end tests of the built daemon: real process, real HTTP on 127.0.0.1, fixture trees.

Golden files: tests/golden/daemon/<fixture>.prom. RDMAHD_UPDATE_GOLDEN=1 rewrites them.
"""

import difflib
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import unittest

from harness import REAL_FIXTURES, SOURCE_DIR, Daemon, families, mask, promtool_check, run

GOLDEN_DIR = os.path.join(SOURCE_DIR, "tests", "golden", "daemon")
UPDATE = os.environ.get("RDMAHD_UPDATE_GOLDEN") == "1"


def fixture_trees():
    """(name, daemon args) for every tree the daemon is run on.

    Trees without captured DCB state get an empty --path.dcb folder, so the build machine's own
    netlink and ethtool answers never leak into a golden file."""
    empty_dcb = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")
    trees = []
    for d in sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "*", ""))):
        trees.append(("project-" + os.path.basename(d.rstrip("/")), d.rstrip("/")))
    if os.path.isdir(os.path.join(SOURCE_DIR, "tests", "fixtures", "rxe")):
        trees.append(("project-rxe", os.path.join(SOURCE_DIR, "tests", "fixtures", "rxe")))
    for d in sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "fixtures", "roce", "*", ""))):
        trees.append(("project-roce-" + os.path.basename(d.rstrip("/")), d.rstrip("/")))
    for d in sorted(glob.glob(os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "*", ""))):
        trees.append(("project-host-" + os.path.basename(d.rstrip("/")), d.rstrip("/")))
    for d in sorted(glob.glob(os.path.join(REAL_FIXTURES, "sysfs", "*", ""))):
        trees.append(("real-" + os.path.basename(d.rstrip("/")), d.rstrip("/")))
    out = []
    for name, d in trees:
        sysfs = os.path.join(d, "sys") if os.path.isdir(os.path.join(d, "sys")) else d
        procfs = os.path.join(d, "proc") if os.path.isdir(os.path.join(d, "proc")) else os.path.join(d, "no-proc")
        dcb = os.path.join(d, "dcb") if os.path.isdir(os.path.join(d, "dcb")) else empty_dcb
        args = [f"--path.sysfs={sysfs}", f"--path.procfs={procfs}", f"--path.dcb={dcb}"]
        if os.path.isdir(os.path.join(d, "dev")):
            args.append("--path.dev=" + os.path.join(d, "dev"))
        if os.path.exists(os.path.join(d, "config.yaml")):
            args.append("--config.file=" + os.path.join(d, "config.yaml"))
        if os.path.exists(os.path.join(d, "dmesg.txt")):
            args.append("--path.kmsg=" + os.path.join(d, "dmesg.txt"))
        out.append((name, args))
    return out


# Sections of docs/metrics.md whose families only a live node (or configured peers) exposes; each
# collector's unit test asserts its section against what it renders.
# module_eeprom is not among them: it reads a capture's --path.dcb/<netdev>/module-eeprom.bin, and
# host/device-readiness has one per netdev.
LIVE_ONLY_SECTIONS = ("(collector `verbs`)", "(probe `peers`)", "(collector `devlink_health`)",
                      "(collector `fec`)", "(collector `ethtool_std_stats`)", "exposed only while a read fails")


def documented_families():
    """(rows, live_only_rows): families documented in docs/metrics.md; live_only_rows are those of
    the LIVE_ONLY_SECTIONS: collectors that ask only the live kernel, the "(probe `peers`)"
    section, exposed only with peers configured, and the read-backoff section, exposed only while
    a read fails (asserted by unit and VM tests)."""
    rows, live_only = set(), set()
    section = ""
    with open(os.path.join(SOURCE_DIR, "docs", "metrics.md")) as f:
        for line in f:
            if line.startswith("## "):
                section = line
            if line.startswith("| `rdma_"):
                live = any(m in section for m in LIVE_ONLY_SECTIONS)
                (live_only if live else rows).add(line.split("`")[1])
    return rows, live_only


class GoldenExpositionTest(unittest.TestCase):
    def test_every_fixture_tree_matches_its_golden_file_and_passes_promtool(self):
        trees = fixture_trees()
        self.assertTrue(os.path.isdir(REAL_FIXTURES), f"real captures missing: {REAL_FIXTURES}")
        self.assertTrue(any(n.startswith("real-") for n, _ in trees), "real fixture trees not found")
        self.assertGreaterEqual(len(trees), 4)
        seen = set()
        for name, args in trees:
            with self.subTest(fixture=name):
                with Daemon(*args) as d:
                    status, ctype, body = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertTrue(ctype.startswith("text/plain; version=0.0.4"), ctype)
                ok, out = promtool_check(body)
                self.assertTrue(ok, f"promtool check metrics on {name}:\n{out}")
                seen |= families(body)
                golden = os.path.join(GOLDEN_DIR, name + ".prom")
                got = mask(body)
                if UPDATE:
                    os.makedirs(GOLDEN_DIR, exist_ok=True)
                    with open(golden, "w") as f:
                        f.write(got)
                    continue
                self.assertTrue(os.path.exists(golden), f"no golden file {golden}; run with RDMAHD_UPDATE_GOLDEN=1")
                with open(golden) as f:
                    want = f.read()
                if got != want:
                    diff = "".join(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                                        "golden/" + name, "daemon", n=1))
                    self.fail(f"/metrics on {name} differs from {golden} "
                              f"(RDMAHD_UPDATE_GOLDEN=1 to accept):\n{diff[:6000]}")
        # docs/metrics.md lists exactly the families the daemon exposes across all fixtures.
        docs, live_only = documented_families()
        self.assertEqual(sorted(seen & live_only), [], "live-only families exposed on a fixture tree")
        self.assertEqual(sorted(seen - docs), [], "exposed but not documented in docs/metrics.md")
        self.assertEqual(sorted(docs - seen), [], "documented in docs/metrics.md but exposed by no fixture")


class AlertExpressionTest(unittest.TestCase):
    def test_flagship_alert_in_checks_doc_is_valid_promql(self):
        """promtool parses the documented PFC alert as a rule (syntax, not semantics)."""
        with open(os.path.join(SOURCE_DIR, "docs", "checks.md")) as f:
            doc = f.read()
        marker = doc.index("<!-- alert: PfcMisconfiguredOnRocePort -->")
        start = doc.index("```promql", marker) + len("```promql")
        expr = doc[start:doc.index("```", start)].strip()
        rule = ("groups:\n- name: rdma-healthd\n  rules:\n  - alert: PfcMisconfiguredOnRocePort\n"
                "    expr: |\n" + "".join("      " + l + "\n" for l in expr.splitlines()))
        with tempfile.NamedTemporaryFile("w", suffix=".yml", delete=False) as f:
            f.write(rule)
        self.addCleanup(os.unlink, f.name)
        p = subprocess.run(["promtool", "check", "rules", f.name], capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)


def assert_check_golden(test, stdout, name):
    """`rdma-healthd check` output against tests/golden/check/NAME (rewritten when updating)."""
    golden = os.path.join(SOURCE_DIR, "tests", "golden", "check", name)
    if UPDATE:
        os.makedirs(os.path.dirname(golden), exist_ok=True)
        with open(golden, "w") as out:
            out.write(stdout)
        return
    with open(golden) as g:
        want = g.read()
    test.assertEqual(stdout, want, "".join(difflib.unified_diff(
        want.splitlines(True), stdout.splitlines(True), "golden", "check")))


class CheckCommandTest(unittest.TestCase):
    """`rdma-healthd check` on a captured node whose RoCE priority has no PFC."""

    FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "roce", "pfc-off")

    def args(self, *extra):
        f = self.FIXTURE
        return ["check", f"--path.sysfs={f}/sys", f"--path.procfs={f}/no-proc", f"--path.dcb={f}/dcb",
                f"--config.file={f}/config.yaml", *extra]

    def test_table_golden_and_exit_code(self):
        p = run(*self.args())
        self.assertEqual(p.returncode, 1, p.stderr)
        assert_check_golden(self, p.stdout, "roce-pfc-off.txt")
        # The flagship failure, its reason and its fix, as an operator reads them.
        self.assertRegex(p.stdout, r"roce_pfc_priority +ens1f0np0 +failed +PFC is off on RoCE priority 3")
        self.assertIn("fix: dcb pfc set dev ens1f0np0 prio-pfc 3:on", p.stdout)

    def test_json_output(self):
        import json
        p = run(*self.args("--output=json"))
        self.assertEqual(p.returncode, 1, p.stderr)
        doc = json.loads(p.stdout)
        self.assertEqual(doc["exit_code"], 1)
        pfc = [v for v in doc["verdicts"] if v["check"] == "roce_pfc_priority"]
        self.assertEqual({v["subject"]: v["status"] for v in pfc}, {"ens1f0np0": "failed", "ens1f1np1": "ok"})

    def test_healthy_policy_exits_zero_and_bad_config_exits_two(self):
        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "class", "infiniband"))  # RDMA core loaded, no device
            ok_cfg = os.path.join(tmp, "ok.yaml")
            with open(ok_cfg, "w") as f:
                f.write("ports:\n  require_roce_v2_gid: false\n")
            f_ = self.FIXTURE
            p = run("check", f"--path.sysfs={tmp}", f"--path.procfs={tmp}", f"--path.dcb={tmp}",
                    f"--config.file={ok_cfg}")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            bad_cfg = os.path.join(tmp, "bad.yaml")
            with open(bad_cfg, "w") as f:
                f.write("roce: {priority: 12}\n")
            p = run("check", f"--path.sysfs={f_}/sys", f"--config.file={bad_cfg}")
            self.assertEqual(p.returncode, 2)
            self.assertIn(bad_cfg + ":1:", p.stderr)


class HostCheckCommandTest(unittest.TestCase):
    """`rdma-healthd check` on a captured two-node host: hugepages short on the NIC's node, a
    workload on the wrong node, 64 KiB memlock limits."""

    FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "numa-misplaced")

    def test_table_golden_and_exit_code(self):
        f = self.FIXTURE
        p = run("check", f"--path.sysfs={f}/sys", f"--path.procfs={f}/proc",
                "--path.dcb=" + os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb"),
                f"--config.file={f}/config.yaml")
        self.assertEqual(p.returncode, 1, p.stderr)
        assert_check_golden(self, p.stdout, "host-numa-misplaced.txt")
        self.assertRegex(p.stdout, r"hugepages_free +mlx5_1 +failed +only 88 free 2 MiB hugepages on node 1")
        self.assertIn("fix: echo 680 > /sys/devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages",
                      p.stdout)
        self.assertRegex(p.stdout, r"workload_numa +trainer +failed +0 of 16 allowed CPUs")
        self.assertRegex(p.stdout, r"memlock +nvmet +failed")


class HostDeviceCheckCommandTest(unittest.TestCase):
    """`rdma-healthd check` on a captured node with a degraded PCIe link, an unset RoCE ToS, a
    missing module and device nodes that are not character devices (tests/fixtures/host)."""

    FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "device-readiness")

    def test_table_golden_and_exit_code(self):
        f = self.FIXTURE
        p = run("check", f"--path.sysfs={f}/sys", f"--path.procfs={f}/proc", f"--path.dcb={f}/dcb",
                f"--path.dev={f}/dev", f"--config.file={f}/config.yaml", f"--path.kmsg={f}/dmesg.txt")
        self.assertEqual(p.returncode, 1, p.stderr)
        assert_check_golden(self, p.stdout, "host-device-readiness.txt")
        # The saved log's temperature warning, 60 s before its end; the ACCESS_REG failure is info.
        self.assertRegex(p.stdout, r"nic_health +mlx5_1 +warning +high temperature 60 s ago \(mlx5_temperature_warning\): ")
        # The refused command is named, not judged, and not called "no NIC health event".
        self.assertRegex(p.stdout, r"nic_health +mlx5_0 +ok +1 link up event, 1 ACCESS_REG command failure \(informational")
        self.assertRegex(p.stdout, r"pcie_link +mlx5_1 +failed +PCIe link trained at 8\.0 GT/s x8")
        self.assertRegex(p.stdout, r"roce_tos +mlx5_1/1 +failed +default ToS 0")
        self.assertIn("echo 106 > /sys/kernel/config/rdma_cm/mlx5_1/ports/1/default_roce_tos", p.stdout)


class VanishingInputTest(unittest.TestCase):
    """A device directory that disappears and a file that becomes unreadable between scrapes cost
    that device / that value, never the scrape."""

    def test_scrape_survives_and_reports_the_error(self):
        src = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "mlx5-roce")
        with tempfile.TemporaryDirectory() as tmp:
            tree = os.path.join(tmp, "tree")
            shutil.copytree(src, tree, symlinks=True)
            sysfs = os.path.join(tree, "sys") if os.path.isdir(os.path.join(tree, "sys")) else tree
            ib = os.path.join(sysfs, "class", "infiniband")
            devices = sorted(os.listdir(ib))
            self.assertGreaterEqual(len(devices), 2)
            gone, kept = devices[-1], devices[0]
            # One attribute cannot be read (EISDIR stands in for EACCES, which root never gets).
            counter = os.path.join(ib, kept, "ports", "1", "counters", "port_rcv_data")
            os.unlink(counter)
            os.mkdir(counter)
            with Daemon(f"--path.sysfs={sysfs}", f"--path.dcb={tmp}") as d:
                status, _, before = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertIn(f'device="{gone}"', before)
                self.assertIn(f'rdma_port_packets_received_total{{device="{kept}",port="1"}}', before)
                self.assertNotIn(f'rdma_port_data_received_bytes_total{{device="{kept}",port="1"}}', before)
                self.assertRegex(before, r'rdma_healthd_collector_errors\{collector="devices"\} [1-9]')
                # The other device vanishes between scrapes.
                link = os.path.join(ib, gone)
                target = os.path.realpath(link)
                if os.path.islink(link):
                    os.unlink(link)
                shutil.rmtree(target)
                time.sleep(0.3)  # past the scrape cache window
                status, _, after = d.get("/metrics")
            self.assertEqual(status, 200)
            self.assertNotIn(f'device="{gone}"', after)
            self.assertIn(f'rdma_port_state_id{{device="{kept}",port="1"}} 4', after)
            self.assertIn('rdma_healthd_collector_success{collector="devices"} 1', after)
            self.assertIn("rdma_devices_found 1", after)


class DaemonEndpointsTest(unittest.TestCase):
    def test_landing_health_ready_and_unknown_paths(self):
        with tempfile.TemporaryDirectory() as empty:
            with Daemon(f"--path.sysfs={empty}", f"--path.procfs={empty}") as d:
                status, ctype, body = d.get("/")
                self.assertEqual(status, 200)
                self.assertIn("text/html", ctype)
                self.assertIn('href="/metrics"', body)
                self.assertEqual(d.get("/-/healthy")[0], 200)
                self.assertEqual(d.get("/-/ready")[0], 200)
                self.assertEqual(d.get("/no-such-page")[0], 404)

    def test_no_rdma_device_still_serves_and_says_so(self):
        with tempfile.TemporaryDirectory() as empty:
            with Daemon(f"--path.sysfs={empty}", f"--path.procfs={empty}") as d:
                status, _, body = d.get("/metrics")
            self.assertEqual(status, 200)
            self.assertIn("rdma_devices_found 0", body)
            self.assertIn("rdma_healthd_build_info{", body)
            self.assertTrue(any("no RDMA device found" in l for l in d.log_lines), d.log_lines)

    def test_no_rdma_device_is_said_before_the_verdicts_it_explains(self):
        # A node without RDMA: module/ captured but no RDMA module in it, so kernel_modules fails.
        # The newcomer reads the log top down: the no-device line must come before any error.
        with tempfile.TemporaryDirectory() as tree:
            os.mkdir(os.path.join(tree, "module"))
            with Daemon(f"--path.sysfs={tree}", f"--path.procfs={tree}") as d:
                self.assertIsNotNone(d.wait_for_log("no RDMA device found", timeout=10, start=0))
                lines = list(d.log_lines)
        errors = [i for i, l in enumerate(lines) if "level=error" in l]
        self.assertTrue(errors, "kernel_modules should fail on this tree:\n" + "\n".join(lines))
        found = next(i for i, l in enumerate(lines) if "no RDMA device found" in l)
        self.assertLess(found, errors[0], "\n".join(lines))

    def test_sigterm_stops_cleanly(self):
        with tempfile.TemporaryDirectory() as empty:
            d = Daemon(f"--path.sysfs={empty}")
            with d:
                pass
            self.assertEqual(d.proc.returncode, 0)
            self.assertTrue(any("shutting down" in l for l in d.log_lines))

    def test_port_in_use_is_a_clear_error(self):
        with tempfile.TemporaryDirectory() as empty:
            with Daemon(f"--path.sysfs={empty}") as d:
                p = run(f"--web.listen-address=127.0.0.1:{d.port}", f"--path.sysfs={empty}", timeout=20)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(f"address 127.0.0.1:{d.port} is already in use", p.stderr)


class ConfigErrorsTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".yaml", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def assert_clean_error(self, p, *needles):
        self.assertEqual(p.returncode, 2, p.stderr)
        for n in needles:
            self.assertIn(n, p.stderr)
        for bad in ("terminate called", "what():", "Aborted", "Traceback"):
            self.assertNotIn(bad, p.stderr)

    def test_malformed_yaml(self):
        path = self.write("roce:\n  priority: [3\n")
        self.assert_clean_error(run("check-config", path), path + ":")

    def test_wrong_type_names_file_line_column_and_key(self):
        path = self.write("roce:\n  priority: nine\n")
        self.assert_clean_error(run("check-config", path), path + ":2:", "roce.priority")

    def test_unknown_key_suggests_the_closest(self):
        path = self.write("roce:\n  prioirty: 3\n")
        self.assert_clean_error(run("--check-config", path), path + ":2:", "prioirty", '"priority"')

    def test_unreadable_file(self):
        p = run("check-config", "/nonexistent/rdma-healthd.yaml")
        self.assert_clean_error(p, "/nonexistent/rdma-healthd.yaml", "No such file")

    def test_daemon_refuses_to_start_on_a_bad_file(self):
        path = self.write("scrape:\n  cache_window: 10s\n")
        p = run(f"--config.file={path}", "--web.listen-address=127.0.0.1:0", timeout=20)
        self.assert_clean_error(p, path + ":2:")

    def test_valid_example_configs(self):
        for path in sorted(glob.glob(os.path.join(SOURCE_DIR, "config", "**", "*.yaml"), recursive=True)):
            with self.subTest(config=path):
                p = run("check-config", path)
                self.assertEqual(p.returncode, 0, p.stderr)
                self.assertIn("OK", p.stdout)


class EmptyFlagValueTest(unittest.TestCase):
    """`--flag=` is an empty value, never "take the next argument": the cases that started the daemon
    with TLS off, on every interface, or printed a table for --output=json. Each run listens on
    127.0.0.1 only, whichever way it is parsed."""

    def refused(self, *args, flag):
        try:
            p = run(*args, timeout=15)
        except subprocess.TimeoutExpired:
            self.fail(f"{flag}= did not stop the start: the daemon ran with {' '.join(args)}")
        self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
        self.assertIn(f"{flag}= is empty: give ", p.stderr)
        if args[0] == "check":
            # Nothing judged: only the reason, one line, for node-problem-detector (it reads stdout).
            self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
            self.assertTrue(p.stdout.startswith(f"RDMA health unknown: {flag}= is empty: give "), p.stdout)
        else:
            self.assertEqual(p.stdout, "")
        return p

    def test_empty_path_dcb_does_not_swallow_the_web_config(self):
        with tempfile.TemporaryDirectory() as tmp:
            web = os.path.join(tmp, "web.yml")
            with open(web, "w") as f:
                f.write("basic_auth_users:\n  prometheus: $2y$04$8p1T1Z5bQn0XbOe5Cp6B8O7o6Dw2QyQx7vWm3l0qQ4X1qzq0n8z5S\n")
            p = self.refused("--web.listen-address=127.0.0.1:0", f"--path.sysfs={tmp}", "--path.dcb=",
                             f"--web.config.file={web}", flag="--path.dcb")
            self.assertIn("--path.dcb= is empty: give a folder, or leave the flag out", p.stderr)

    def test_empty_path_procfs_does_not_swallow_the_listen_address(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.refused("--web.listen-address=127.0.0.1:0", f"--path.sysfs={tmp}", "--path.procfs=",
                         "--web.listen-address=127.0.0.1:0", flag="--path.procfs")

    def test_check_with_empty_sysfs_does_not_swallow_the_output_format(self):
        self.refused("check", "--path.sysfs=", "--output=json", flag="--path.sysfs")


class HostileNameCheckTableTest(unittest.TestCase):
    """A capture whose device name holds a newline and escape sequences cannot print fake rows or
    drive the terminal: every field of `check`'s table stays on its line, escaped."""

    def test_device_name_with_newline_and_escapes(self):
        src = CheckCommandTest.FIXTURE
        name = "mlx5_2\nport_active  mlx5_9-1  ok       fake\x1b[31m\r"
        with tempfile.TemporaryDirectory() as tmp:
            tree = os.path.join(tmp, "tree")
            shutil.copytree(src, tree, symlinks=True)
            ib = os.path.join(tree, "sys", "class", "infiniband")
            os.rename(os.path.join(ib, "mlx5_2"), os.path.join(ib, name))
            p = run("check", f"--path.sysfs={tree}/sys", f"--path.procfs={tree}/no-proc",
                    f"--path.dcb={tree}/dcb", f"--config.file={tree}/config.yaml")
        self.assertEqual(p.returncode, 1, p.stderr)
        escaped = "mlx5_2\\nport_active  mlx5_9-1  ok       fake\\x1b[31m\\r"
        # A row of its own (port_rate: each port says its own rate), and a row naming it among others
        # (port_active: the same verdict for two ports) on the `subjects:` line, escaped both times.
        self.assertRegex(p.stdout, r"\nport_rate +" + re.escape(escaped + "/1") + " +unknown")
        self.assertRegex(p.stdout, r"\n +subjects: mlx5_1/1, " + re.escape(escaped + "/1") + "\n")
        for line in p.stdout.splitlines():
            self.assertFalse(line.startswith("port_active  mlx5_9"), line)
            self.assertFalse(any(ord(c) < 0x20 or ord(c) == 0x7F for c in line), repr(line))


class ReloadTest(unittest.TestCase):
    def test_bad_reload_keeps_running_config_and_good_reload_recovers(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "config.yaml")
            with open(cfg, "w") as f:
                f.write("ports:\n  min_rate_gbps: 100\n")
            with Daemon(f"--config.file={cfg}", f"--path.sysfs={tmp}") as d:
                _, _, body = d.get("/metrics")
                self.assertIn("rdma_healthd_config_last_reload_successful 1", body)

                with open(cfg, "w") as f:
                    f.write("ports:\n  min_rate_gbps: [oops\n")
                d.signal(signal.SIGHUP)
                line = d.wait_for_log("reload failed")
                self.assertIsNotNone(line, d.log_lines)
                self.assertIn(cfg, line)
                status, _, body = d.get("/metrics")
                self.assertEqual(status, 200)
                self.assertIn("rdma_healthd_config_last_reload_successful 0", body)

                with open(cfg, "w") as f:
                    f.write("ports:\n  min_rate_gbps: 25\n")
                d.signal(signal.SIGHUP)
                self.assertIsNotNone(d.wait_for_log("configuration reloaded"), d.log_lines)
                _, _, body = d.get("/metrics")
                self.assertIn("rdma_healthd_config_last_reload_successful 1", body)
                self.assertEqual(d.get("/-/healthy")[0], 200)


SAMPLE_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*(\{[^{}]*\})?) ([-+0-9.eE]+|NaN|[+-]Inf)$')


def series_keys(exposition):
    """Name and labels of every sample, in order; None for a line that is not a well-formed sample."""
    keys = []
    for line in exposition.splitlines():
        if line and not line.startswith("#"):
            m = SAMPLE_LINE.match(line)
            keys.append(m.group(1) if m else None)
    return keys


class ConcurrentScrapeTest(unittest.TestCase):
    def test_concurrent_scrapes_during_reloads_get_whole_expositions(self):
        """Scrapes that overlap share one collection and one rendered text, whose buffer is reused
        once nobody sends it any more: every response must still be a whole, well-formed exposition,
        also while reloads change what is rendered. (Run under ThreadSanitizer as well.)"""
        # A big node (bench/gen_tree.py, 16 devices): a ~280 kB text takes long enough to send that
        # renders and sends overlap.
        tree = tempfile.mkdtemp(prefix="rdmahd-e2e-")
        self.addCleanup(shutil.rmtree, tree, True)
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "gen_tree.py"), tree, "--devices", "16"],
                       check=True, capture_output=True)
        fixture = os.path.join(tree, "sys")
        empty_dcb = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")
        with Daemon(f"--path.sysfs={fixture}", f"--path.dcb={empty_dcb}") as d:
            reference = series_keys(d.get("/metrics")[2])
            results, errors = [], []

            def scrape_many():
                for _ in range(15):
                    try:
                        results.append(d.get("/metrics"))
                    except Exception as e:  # noqa: BLE001 - reported below
                        errors.append(repr(e))

            threads = [threading.Thread(target=scrape_many) for _ in range(6)]
            for t in threads:
                t.start()
            for _ in range(3):
                d.signal(signal.SIGHUP)
                time.sleep(0.05)
            for t in threads:
                t.join(timeout=60)
            self.assertEqual(errors, [])
            self.assertEqual(len(results), 90)
            for status, _, body in results:
                self.assertEqual(status, 200)
                self.assertTrue(body.splitlines()[-1].startswith("rdma_healthd_build_info{"), body[-200:])
                self.assertEqual(series_keys(body), reference)


class SystemdNotifyTest(unittest.TestCase):
    """The sd_notify protocol against a datagram socket standing in for systemd."""

    def test_ready_reloading_watchdog_stopping(self):
        import socket
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "notify")
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            sock.bind(path)
            sock.settimeout(10)
            messages = []

            def until(needle):
                while not any(needle in m for m in messages):
                    messages.append(sock.recv(4096).decode())

            d = Daemon(f"--path.sysfs={tmp}", env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
            try:
                with d:
                    until("READY=1")
                    until("WATCHDOG=1")
                    d.signal(signal.SIGHUP)
                    until("RELOADING=1")
                until("STOPPING=1")
            finally:
                sock.close()
            joined = "\n".join(messages)
            self.assertLess(joined.index("READY=1"), joined.index("RELOADING=1"))
            self.assertLess(joined.index("RELOADING=1"), joined.index("STOPPING=1"))


if __name__ == "__main__":
    unittest.main(verbosity=2)
