"""The shipped alert rules against a real Prometheus server scraping real daemons (loopback only).

Two daemons serve captured nodes: the pfc-off capture (PFC off on the RoCE priority of ens1f0np0,
link-level pause on next to PFC) and a copy of it whose ens1f0np0 has the healthy DCB state of its
sibling port. Debian's Prometheus scrapes both every second and evaluates a copy of the shipped
rules whose `for:` is zero. RdmaPfcMisconfigured must fire for the broken netdev, with the right
labels, within a bounded time, and never for the healthy node or port.
"""

import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.request

try:
    import yaml
except ImportError:  # see packaging/prometheus/rules_test.py
    import sys
    if sys.executable != "/usr/bin/python3" and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

from harness import SOURCE_DIR, Daemon

FIXTURE = os.path.join(SOURCE_DIR, "tests", "fixtures", "roce", "pfc-off")
RULES = os.path.join(SOURCE_DIR, "packaging", "prometheus", "rdma-healthd-alerts.yml")
DEADLINE_S = 60


def free_loopback_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def daemon_args(root):
    return [f"--path.sysfs={root}/sys", f"--path.procfs={root}/no-proc", f"--path.dcb={root}/dcb",
            f"--config.file={root}/config.yaml"]


class PrometheusAlertsTest(unittest.TestCase):
    def setUp(self):
        if shutil.which("promtool") is None or shutil.which("prometheus") is None:
            self.fail("Debian's prometheus package is needed (scripts/install-deps.sh test)")
        self.tmp = tempfile.mkdtemp(prefix="rdmahd-prom-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def healthy_copy(self):
        root = os.path.join(self.tmp, "healthy")
        shutil.copytree(FIXTURE, root, symlinks=True)
        for name in ("pfc.json", "ethtool-a.txt"):
            shutil.copy(os.path.join(root, "dcb", "ens1f1np1", name), os.path.join(root, "dcb", "ens1f0np0", name))
        return root

    def fast_rules(self):
        with open(RULES) as f:
            doc = yaml.safe_load(f)
        for group in doc["groups"]:
            group["interval"] = "1s"
            for rule in group["rules"]:
                rule.pop("for", None)
        path = os.path.join(self.tmp, "rules.yml")
        with open(path, "w") as f:
            yaml.safe_dump(doc, f)
        return path

    def start_prometheus(self, targets, rules):
        port = free_loopback_port()
        config = {
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s", "scrape_timeout": "900ms"},
            "rule_files": [rules],
            "scrape_configs": [{"job_name": "rdma-healthd",
                                "static_configs": [{"targets": targets}]}],
        }
        path = os.path.join(self.tmp, "prometheus.yml")
        with open(path, "w") as f:
            yaml.safe_dump(config, f)
        log = open(os.path.join(self.tmp, "prometheus.log"), "w")
        self.addCleanup(log.close)
        proc = subprocess.Popen(["prometheus", f"--config.file={path}",
                                 f"--storage.tsdb.path={self.tmp}/tsdb",
                                 f"--web.listen-address=127.0.0.1:{port}"],
                                stdout=log, stderr=subprocess.STDOUT)

        def stop():
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.addCleanup(stop)
        return port

    def api(self, port, path):
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as r:
            return json.load(r)["data"]

    def prometheus_log(self):
        with open(os.path.join(self.tmp, "prometheus.log")) as f:
            return f.read()[-3000:]

    def test_pfc_alert_fires_for_the_broken_port_only(self):
        healthy = self.healthy_copy()
        with Daemon(*daemon_args(FIXTURE)) as broken_node, Daemon(*daemon_args(healthy)) as healthy_node:
            broken = f"127.0.0.1:{broken_node.port}"
            fine = f"127.0.0.1:{healthy_node.port}"
            port = self.start_prometheus([broken, fine], self.fast_rules())

            want = {(broken, "ens1f0np0", "roce_pfc_priority"), (broken, "ens1f0np0", "roce_global_pause")}
            firing = set()
            deadline = time.monotonic() + DEADLINE_S
            while time.monotonic() < deadline:
                try:
                    alerts = self.api(port, "/api/v1/alerts")["alerts"]
                except OSError:
                    alerts = []  # still starting
                pfc = [a for a in alerts if a["labels"]["alertname"] == "RdmaPfcMisconfigured"]
                firing = {(a["labels"]["instance"], a["labels"]["subject"], a["labels"]["check"])
                          for a in pfc if a["state"] == "firing"}
                if firing >= want:
                    break
                time.sleep(0.5)
            self.assertEqual(firing, want, "RdmaPfcMisconfigured within %d s\n%s" % (DEADLINE_S, self.prometheus_log()))
            a = next(a for a in pfc if a["labels"]["check"] == "roce_pfc_priority")
            self.assertEqual(a["labels"]["severity"], "critical")
            self.assertIn("ens1f0np0", a["annotations"]["summary"])

            # Both targets are up, so the healthy node's silence is not blindness.
            up = {r["metric"]["instance"]: r["value"][1]
                  for r in self.api(port, "/api/v1/query?query=up")["result"]}
            self.assertEqual(up, {broken: "1", fine: "1"})
            healthy_pfc = self.api(port, "/api/v1/query?query=" + urllib.request.quote(
                f'rdma_check_status{{instance="{fine}",check="roce_pfc_priority",status="ok"}}'))["result"]
            self.assertEqual(len(healthy_pfc), 2, "both ports of the healthy node have a PFC verdict")
            self.assertTrue(all(r["value"][1] == "1" for r in healthy_pfc))


if __name__ == "__main__":
    unittest.main()
