"""The shipped alert rules and Grafana dashboard against a real Prometheus server scraping real
daemons (loopback only).

Four daemons serve captured nodes: the pfc-off capture (PFC off on the RoCE priority of ens1f0np0,
link-level pause on next to PFC), a copy of it whose ens1f0np0 has the healthy DCB state of its
sibling port, the real procfs fixture tree (port counters and hw_counters) and the project's
mlx5-roce tree (DCQCN hw_counters; a copy whose link-integrity and RNR-retry counters the test
raises), under an inventory.expected its 100 Gb/s ports fall short of;
two more serve the host-readiness fixtures, device-readiness with its saved kernel log
(--path.kmsg), PCIe AER counters and module EEPROM dumps; and a loopback
HTTP server serves tests/fixtures/peers/metrics.prom, a prober daemon's /metrics captured on
Soft-RoCE (the peer probes need an RDMA device, so no daemon here can produce it). Debian's Prometheus
scrapes them every second and evaluates a copy of the shipped rules whose `for:` is zero.
RdmaPfcMisconfigured must fire for the broken netdev, with the right labels, within a bounded time,
and never for the healthy node or port; RdmaPeerUnreachable must fire for the captured prober's
unreachable peer only; RdmaInventoryBelowExpected for the mlx5-roce node only, RdmaLinkErrors and
RdmaTransportErrors for the port whose counters rose only; every dashboard
query must return data, and the NIC health panels the faults the fixtures hold.
"""

import http.server
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time
import unittest
import urllib.parse
import urllib.request

try:
    import yaml
except ImportError:  # see packaging/prometheus/rules_test.py
    import sys
    if sys.executable != "/usr/bin/python3" and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

from harness import REAL_FIXTURES, SOURCE_DIR, Daemon

FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "roce", "pfc-off")
RULES = os.path.join(SOURCE_DIR, "packaging", "prometheus", "rdma-healthd-alerts.yml")
DASHBOARD = os.path.join(SOURCE_DIR, "packaging", "grafana", "rdma-healthd-dashboard.json")
# The single-node drill-down next to the fleet view.
NODE_DASHBOARD = os.path.join(SOURCE_DIR, "packaging", "grafana", "rdma-healthd-node-dashboard.json")
DASHBOARDS = (DASHBOARD, NODE_DASHBOARD)
REAL_TREE = os.path.join(REAL_FIXTURES, "sysfs", "procfs-fixtures")
MLX5_TREE = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "mlx5-roce")
# Host readiness: PCIe, ToS, device nodes (device-readiness); hugepages per node and workloads
# (numa-misplaced).
HOST_DEVICE_TREE = os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "device-readiness")
# 2 ports at 200 Gb/s or more: mlx5-roce's two ports run at 100 (hardware_present node fails).
MLX5_INVENTORY = "inventory:\n  expected: {devices: 2, ports: 2, min_rate_gbps: 200}\n"
HOST_MEMORY_TREE = os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "numa-misplaced")
PEERS_CAPTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "peers", "metrics.prom")
DEADLINE_S = 60


def free_loopback_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daemon_args(root):
    return [f"--path.sysfs={root}/sys", f"--path.procfs={root}/no-proc", f"--path.dcb={root}/dcb",
            f"--config.file={root}/config.yaml"]


class PrometheusAlertsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("promtool") is None or shutil.which("prometheus") is None:
            raise RuntimeError("Debian's prometheus package is needed (scripts/install-deps.sh test)")
        if not os.path.isdir(REAL_TREE):
            raise RuntimeError("real fixtures not found at " + REAL_TREE)
        cls.tmp = tempfile.mkdtemp(prefix="rdmahd-prom-")
        cls.cleanups = [lambda: shutil.rmtree(cls.tmp, True)]
        try:
            daemons = [Daemon(*daemon_args(FIXTURE)), Daemon(*daemon_args(cls.healthy_copy())),
                       Daemon(f"--path.sysfs={REAL_TREE}/sys", f"--path.procfs={REAL_TREE}/proc"),
                       Daemon(f"--path.sysfs={cls.mlx5_copy()}/sys", f"--path.procfs={MLX5_TREE}/no-proc",
                              f"--config.file={cls.write_config('mlx5-inventory.yaml', MLX5_INVENTORY)}"),
                       Daemon(f"--path.sysfs={HOST_DEVICE_TREE}/sys", f"--path.procfs={HOST_DEVICE_TREE}/proc",
                              f"--path.dcb={HOST_DEVICE_TREE}/dcb", f"--path.dev={HOST_DEVICE_TREE}/dev",
                              f"--config.file={HOST_DEVICE_TREE}/config.yaml",
                              f"--path.kmsg={HOST_DEVICE_TREE}/dmesg.txt"),
                       Daemon(f"--path.sysfs={HOST_MEMORY_TREE}/sys", f"--path.procfs={HOST_MEMORY_TREE}/proc",
                              f"--config.file={HOST_MEMORY_TREE}/config.yaml")]
            for d in daemons:
                d.__enter__()
                cls.cleanups.append(d.stop)
            cls.broken, cls.fine, cls.real, cls.mlx5, cls.host_device, cls.host_memory = (
                f"127.0.0.1:{d.port}" for d in daemons)
            cls.peers = cls.serve_capture(PEERS_CAPTURE)
            cls.port = cls.start_prometheus([cls.broken, cls.fine, cls.real, cls.mlx5, cls.host_device, cls.host_memory,
                                             cls.peers], cls.fast_rules())
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def tearDownClass(cls):
        for cleanup in reversed(cls.cleanups):
            cleanup()
        cls.cleanups = []

    @classmethod
    def write_config(cls, name, text):
        path = os.path.join(cls.tmp, name)
        with open(path, "w") as f:
            f.write(text)
        return path

    @classmethod
    def mlx5_copy(cls):
        """mlx5-roce in the test's folder, so its counters can move (test_link_and_transport_alerts...)."""
        root = os.path.join(cls.tmp, "mlx5-roce")
        shutil.copytree(MLX5_TREE, root, symlinks=True)
        return root

    @classmethod
    def healthy_copy(cls):
        root = os.path.join(cls.tmp, "healthy")
        shutil.copytree(FIXTURE, root, symlinks=True)
        for name in ("pfc.json", "ethtool-a.txt"):
            shutil.copy(os.path.join(root, "dcb", "ens1f1np1", name), os.path.join(root, "dcb", "ens1f0np0", name))
        return root

    @classmethod
    def serve_capture(cls, path):
        """Serves a captured exposition as /metrics on a loopback port; returns host:port."""
        with open(path, "rb") as f:
            body = f.read()

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                self.send_response(200 if self.path == "/metrics" else 404)
                self.send_header("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()

        def stop():
            server.shutdown()
            server.server_close()
        cls.cleanups.append(stop)
        return f"127.0.0.1:{server.server_address[1]}"

    @classmethod
    def fast_rules(cls):
        with open(RULES) as f:
            doc = yaml.safe_load(f)
        for group in doc["groups"]:
            group["interval"] = "1s"
            for rule in group["rules"]:
                rule.pop("for", None)
        path = os.path.join(cls.tmp, "rules.yml")
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        return path

    @classmethod
    def start_prometheus(cls, targets, rules):
        port = free_loopback_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
            "rule_files": [rules],
            "scrape_configs": [{"job_name": "rdma-healthd",
                                "static_configs": [{"targets": targets}]}],
        }
        path = os.path.join(cls.tmp, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        log = open(os.path.join(cls.tmp, "prometheus.log"), "w")
        proc = subprocess.Popen(["prometheus", f"--config.file={path}",
                                 f"--storage.tsdb.path={cls.tmp}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
        cls.cleanups.append(stop)
        return port

    def api(self, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}{path}", timeout=5) as r:
            return json.load(r)["data"]

    def query(self, expr):
        return self.api("/api/v1/query?query=" + urllib.parse.quote(expr))["result"]

    def prometheus_log(self):
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            return f.read()[-3000:]

    def wait_for_scrapes(self, n):
        """Until every target has been scraped n times (rate() over them needs two samples)."""
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                r = self.query("min(count_over_time(up[1m])) >= %d and min(up) == 1" % n)
                if r:
                    return
            except OSError:
                pass  # still starting
            time.sleep(0.5)
        self.fail("Prometheus did not scrape every target %d times\n%s" % (n, self.prometheus_log()))

    def alerts_until(self, name, done):
        """The alerts named `name`, polled until done(the firing ones) or DEADLINE_S."""
        alerts = []
        deadline = time.monotonic() + DEADLINE_S
        while time.monotonic() < deadline:
            try:
                alerts = [a for a in self.api("/api/v1/alerts")["alerts"] if a["labels"]["alertname"] == name]
            except OSError:
                alerts = []  # still starting
            if done([a for a in alerts if a["state"] == "firing"]):
                break
            time.sleep(0.5)
        return alerts

    def test_pfc_alert_fires_for_the_broken_port_only(self):
        broken, fine = self.broken, self.fine
        want = {(broken, "ens1f0np0", "roce_pfc_priority"), (broken, "ens1f0np0", "roce_global_pause")}
        # The broken/healthy pair decides; the other targets are there for the dashboard.
        pfc = self.alerts_until("RdmaPfcMisconfigured", lambda firing: {
            (a["labels"]["instance"], a["labels"]["subject"], a["labels"]["check"])
            for a in firing if a["labels"]["instance"] in (broken, fine)} >= want)
        firing = {(a["labels"]["instance"], a["labels"]["subject"], a["labels"]["check"])
                  for a in pfc if a["state"] == "firing" and a["labels"]["instance"] in (broken, fine)}
        self.assertEqual(firing, want, "RdmaPfcMisconfigured within %d s\n%s" % (DEADLINE_S, self.prometheus_log()))
        a = next(a for a in pfc if a["labels"]["check"] == "roce_pfc_priority")
        self.assertEqual(a["labels"]["severity"], "critical")
        self.assertIn("ens1f0np0", a["annotations"]["summary"])

        # Every target is up, so the healthy node's silence is not blindness.
        up = {r["metric"]["instance"]: r["value"][1] for r in self.query("up")}
        self.assertEqual(up, {broken: "1", fine: "1", self.real: "1", self.mlx5: "1", self.host_device: "1",
                              self.host_memory: "1", self.peers: "1"})
        healthy_pfc = self.query(f'rdma_check_status{{instance="{fine}",check="roce_pfc_priority",status="ok"}}')
        self.assertEqual(len(healthy_pfc), 2, "both ports of the healthy node have a PFC verdict")
        self.assertTrue(all(r["value"][1] == "1" for r in healthy_pfc))

    def test_peer_alert_fires_for_the_captured_unreachable_peer_only(self):
        # The capture's prober reached its responder at 192.0.2.1 and failed on 192.0.2.99.
        alerts = self.alerts_until("RdmaPeerUnreachable", bool)
        firing = {(a["labels"]["instance"], a["labels"]["subject"]) for a in alerts if a["state"] == "firing"}
        self.assertEqual(firing, {(self.peers, "192.0.2.99")}, self.prometheus_log())
        reachable = self.query(f'rdma_check_status{{instance="{self.peers}",check="peer_reachable",status="ok"}} == 1')
        self.assertEqual([r["metric"]["subject"] for r in reachable], ["192.0.2.1"])

    def test_inventory_alert_fires_for_the_node_below_its_expectation_only(self):
        alerts = self.alerts_until("RdmaInventoryBelowExpected", bool)
        firing = {a["labels"]["instance"] for a in alerts if a["state"] == "firing"}
        self.assertEqual(firing, {self.mlx5}, self.prometheus_log())
        # The other nodes have no inventory.expected, so no node verdict at all; their devices are present.
        present = self.query('rdma_check_status{check="hardware_present",subject!="node",status="ok"} == 1')
        self.assertEqual({r["metric"]["instance"] for r in present}, {self.broken, self.fine, self.real, self.mlx5,
                                                                      self.host_device, self.host_memory})
        self.assertEqual(self.query('rdma_check_status{check="hardware_present",status="failed"} == 1')[0]["metric"]
                         ["subject"], "node")

    def test_link_and_transport_alerts_fire_for_the_port_whose_counters_rose(self):
        self.wait_for_scrapes(2)  # the daemon has a baseline: its error-rate verdicts are ok
        port = os.path.realpath(os.path.join(self.tmp, "mlx5-roce", "sys", "class", "infiniband", "mlx5_1"))
        # In place, as the kernel's values change under the same files: any increase of
        # local_link_integrity_errors fails, and 500 acknowledgement timeouts among 10,000 packets (5 %
        # lost) fail the transport. (RNR NAKs received are flow control and never fail it.)
        for name, by in (("counters/local_link_integrity_errors", 2), ("hw_counters/local_ack_timeout_err", 500),
                         ("counters/port_xmit_packets", 5000), ("counters/port_rcv_packets", 5000),
                         ("hw_counters/rnr_nak_retry_err", 1)):
            path = os.path.join(port, "ports", "1", name)
            with open(path, "r+") as f:
                value = int(f.read().strip()) + by
                f.seek(0)
                f.truncate()
                f.write(f"{value}\n")
        want = {("RdmaLinkErrors", self.mlx5, "mlx5_1/1"), ("RdmaTransportErrors", self.mlx5, "mlx5_1/1")}
        for name in ("RdmaLinkErrors", "RdmaTransportErrors"):
            alerts = self.alerts_until(name, bool)
            firing = {(name, a["labels"]["instance"], a["labels"]["subject"]) for a in alerts if a["state"] == "firing"}
            self.assertEqual(firing, {w for w in want if w[0] == name}, self.prometheus_log())
        link = next(a for a in self.alerts_until("RdmaLinkErrors", bool) if a["state"] == "firing")
        self.assertEqual(link["labels"]["check"], "port_errors")
        self.assertTrue(link["annotations"]["runbook_url"].endswith("checks.md#port_errors"))
        # The dashboard's link panel sees the increase.
        rates = self.query(self.panel_exprs(DASHBOARD, "Link integrity errors and recoveries")["B"] + " > 0")
        self.assertEqual({(r["metric"]["instance"], r["metric"]["device"]) for r in rates}, {(self.mlx5, "mlx5_1")})

    def panel_exprs(self, path, title):
        with open(path) as f:
            panel = next(p for p in json.load(f)["panels"] if p["title"] == title)
        return {t["refId"]: t["expr"].replace('=~"$instance"', '=~".*"').replace('="$instance"', '=~".*"')
                .replace("$device", ".*").replace("$netdev", ".*").replace("$__rate_interval", "1m")
                for t in panel["targets"]}

    def test_nic_health_panels_show_the_fixture_faults(self):
        """What the new panels show on device-readiness: its saved kernel log, AER counters and optics."""
        self.wait_for_scrapes(3)
        dev = self.host_device
        for path in DASHBOARDS:
            with self.subTest(dashboard=os.path.basename(path)):
                rx = self.panel_exprs(path, "Module RX power per lane")
                lanes = {r["metric"]["lane"]: float(r["value"][1]) for r in self.query(rx["A"])
                         if r["metric"]["netdev"] == "ens1f1np1"}
                low_warning = {round(float(r["value"][1]), 6) for r in self.query(rx["B"])}
                self.assertEqual(low_warning, {-10.0}, "the module's 0.1 mW low warning in dBm")
                self.assertAlmostEqual(lanes["3"], -11.549, places=2)
                self.assertTrue(all(v > -1.0 for lane, v in lanes.items() if lane != "3"), lanes)
                aer = self.query(self.panel_exprs(path, "PCIe AER errors since enumeration")["A"])
                self.assertEqual({(r["metric"]["device"], r["metric"]["error"], r["value"][1]) for r in aer},
                                 {("mlx5_1", "RxErr", "12"), ("mlx5_1", "BadTLP", "3"), ("mlx5_1", "CmpltTO", "1")})
                events = self.query(self.panel_exprs(path, "Kernel log NIC events")["A"])
                self.assertEqual({(r["metric"]["instance"], r["metric"]["device"], r["metric"]["event"],
                                   r["metric"]["severity"]) for r in events},
                                 {(dev, "mlx5_0", "command_failed", "info"), (dev, "mlx5_0", "link_up", "info"),
                                  (dev, "mlx5_1", "mlx5_temperature_warning", "warning")})
        verdicts = {(r["metric"]["check"], r["metric"]["subject"], r["metric"]["status"])
                    for r in self.query(self.panel_exprs(NODE_DASHBOARD, "Link and NIC verdicts")["A"])
                    if r["metric"]["instance"] == dev}
        self.assertLessEqual({("nic_health", "mlx5_1", "warning"), ("module_health", "ens1f1np1", "warning"),
                              ("module_health", "ens1f0np0", "ok"), ("hardware_present", "mlx5_1", "ok")}, verdicts)

    def test_every_dashboard_query_returns_data(self):
        self.wait_for_scrapes(3)

        def concrete(expr):
            # The node dashboard selects one instance (instance="$instance"): here, any.
            for var in ("$instance", "$device", "$netdev"):
                expr = expr.replace(f'="{var}"', '=~".*"').replace(var, ".*")
            return expr.replace("$__rate_interval", "1m")

        for path in DASHBOARDS:
            with open(path) as f:
                dash = json.load(f)
            panels = [p for p in dash["panels"] if p["type"] != "row"]
            self.assertGreater(len(panels), 10)
            for p in panels:
                for t in p["targets"]:
                    with self.subTest(dashboard=os.path.basename(path), panel=p["title"], ref=t["refId"]):
                        self.assertTrue(self.query(concrete(t["expr"])), "no data for " + t["expr"])
            for v in dash["templating"]["list"]:
                if v["type"] != "query":
                    continue
                m = re.fullmatch(r"label_values\((.*), (\w+)\)", v["definition"])
                with self.subTest(dashboard=os.path.basename(path), variable=v["name"]):
                    self.assertIsNotNone(m, v["definition"])
                    values = {r["metric"].get(m.group(2)) for r in self.query(concrete(m.group(1)))}
                    self.assertTrue(values - {None}, "variable %s has no values" % v["name"])

    def test_dashboard_uses_only_documented_metrics(self):
        with open(os.path.join(SOURCE_DIR, "docs", "metrics.md")) as f:
            documented = set(re.findall(r"^\| `([a-z_:]+)`", f.read(), re.M))
        for path in DASHBOARDS:
            with open(path) as f:
                dash = json.load(f)
            exprs = [t["expr"] for p in dash["panels"] for t in p.get("targets", [])]
            exprs += [v["definition"] for v in dash["templating"]["list"] if v["type"] == "query"]
            used = {m for e in exprs for m in re.findall(r"\b(rdma_[a-z0-9_]+)", e)}
            self.assertGreater(len(used), 20)
            self.assertEqual(sorted(used - documented), [], f"{path}: metrics missing from docs/metrics.md")

    def test_node_dashboard_is_one_node_and_says_what_bad_means(self):
        with open(NODE_DASHBOARD) as f:
            dash = json.load(f)
        with open(DASHBOARD) as f:
            self.assertNotEqual(json.load(f)["uid"], dash["uid"])
        instance = next(v for v in dash["templating"]["list"] if v["name"] == "instance")
        self.assertFalse(instance["multi"] or instance["includeAll"], "one node at a time")
        ids = [p["id"] for p in dash["panels"]]
        self.assertEqual(len(ids), len(set(ids)))
        for p in dash["panels"]:
            self.assertLessEqual(p["gridPos"]["x"] + p["gridPos"]["w"], 24, p["title"])
            if p["type"] == "row":
                continue
            with self.subTest(panel=p["title"]):
                # What a bad value is, in the panel's own words.
                self.assertRegex(p.get("description", ""), r"(?i)\bbad\b|above 0|should (be|stay)")
                for t in p["targets"]:
                    self.assertIn('instance="$instance"', t["expr"])


if __name__ == "__main__":
    unittest.main()
