"""packaging/kubernetes: schema-valid manifests that fit together and match the daemon.

The schemas come from kubernetes-models (npm, pinned in package-lock.json, installed into the
build tree); the rest is checked here: selectors, named ports and probes, volumes, the config in
the ConfigMap (validated by the daemon itself), the flags in the DaemonSet (known to the daemon),
and the PrometheusRule against the shipped rules file.
"""

import glob
import os
import re
import shutil
import subprocess
import sys
import unittest

try:
    import yaml
except ImportError:  # see packaging/prometheus/rules_test.py
    if sys.executable != "/usr/bin/python3" and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", ".."))
MANIFESTS = os.path.join(SOURCE_DIR, "packaging", "kubernetes")
BUILD_DIR = os.environ.get("RDMAHD_BUILD_DIR", "")
BINARY = os.environ.get("RDMAHD_BINARY", "")


def load(name):
    with open(os.path.join(MANIFESTS, name)) as f:
        return yaml.safe_load(f)


def subset(small, big):
    return all(big.get(k) == v for k, v in small.items())


class KubernetesManifestsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.ds = load("daemonset.yaml")
        cls.pod = cls.ds["spec"]["template"]
        cls.container = cls.pod["spec"]["containers"][0]
        cls.svc = load("service.yaml")
        cls.sm = load("servicemonitor.yaml")
        cls.cm = load("configmap.yaml")

    def test_schemas(self):
        if not BUILD_DIR:
            self.fail("RDMAHD_BUILD_DIR must name the build tree (ctest sets it)")
        if shutil.which("npm") is None or shutil.which("node") is None:
            self.fail("node and npm are needed (scripts/install-deps.sh test)")
        work = os.path.join(BUILD_DIR, "k8s-validate")
        os.makedirs(work, exist_ok=True)
        for name in ("package.json", "package-lock.json", "validate.mjs"):
            shutil.copy(os.path.join(HERE, name), work)
        if not os.path.isdir(os.path.join(work, "node_modules", "kubernetes-models")):
            p = subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=work, capture_output=True,
                               text=True, timeout=300)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        files = sorted(f for f in glob.glob(os.path.join(MANIFESTS, "*.yaml")) if not f.endswith("kustomization.yaml"))
        p = subprocess.run(["node", "validate.mjs", *files], cwd=work, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count(": valid"), len(files), p.stdout)

    def test_kustomization_lists_every_manifest(self):
        listed = set(load("kustomization.yaml")["resources"])
        present = {os.path.basename(f) for f in glob.glob(os.path.join(MANIFESTS, "*.yaml"))} - {"kustomization.yaml"}
        self.assertEqual(listed, present)

    def test_selectors_and_ports_fit(self):
        labels = self.pod["metadata"]["labels"]
        self.assertTrue(subset(self.ds["spec"]["selector"]["matchLabels"], labels))
        self.assertTrue(subset(self.svc["spec"]["selector"], labels))
        self.assertTrue(subset(self.sm["spec"]["selector"]["matchLabels"], self.svc["metadata"]["labels"]))
        container_ports = {p["name"]: p["containerPort"] for p in self.container["ports"]}
        svc_ports = {p["name"]: p for p in self.svc["spec"]["ports"]}
        for p in svc_ports.values():
            self.assertIn(p["targetPort"], container_ports)
        for e in self.sm["spec"]["endpoints"]:
            self.assertIn(e["port"], svc_ports)
            self.assertEqual(e["path"], "/metrics")
        listen = next(a for a in self.container["args"] if a.startswith("--web.listen-address="))
        self.assertTrue(listen.endswith(":%d" % container_ports["metrics"]), listen)
        self.assertEqual(self.container["readinessProbe"]["httpGet"]["path"], "/-/ready")
        self.assertEqual(self.container["livenessProbe"]["httpGet"]["path"], "/-/healthy")
        for probe in ("readinessProbe", "livenessProbe"):
            self.assertIn(self.container[probe]["httpGet"]["port"], container_ports)
        # The job label becomes "rdma-healthd", which RdmaHealthdDown matches.
        self.assertEqual(labels[self.sm["spec"]["jobLabel"]], "rdma-healthd")

    def test_node_level_settings(self):
        spec = self.pod["spec"]
        self.assertTrue(spec["hostNetwork"], "RoCE netdevs, DCB and ethtool live in the host namespace")
        sc = self.container["securityContext"]
        self.assertEqual(sc["capabilities"]["drop"], ["ALL"])
        self.assertEqual(sc["capabilities"]["add"], ["IPC_LOCK", "SYSLOG"])
        self.assertFalse(sc["allowPrivilegeEscalation"])
        volumes = {v["name"] for v in spec["volumes"]}
        for m in self.container["volumeMounts"]:
            self.assertIn(m["name"], volumes)
        self.assertIn("/dev/infiniband", [m["mountPath"] for m in self.container["volumeMounts"]])

    def test_config_in_configmap_is_valid_and_mounted_where_the_daemon_reads_it(self):
        config_arg = next(a for a in self.container["args"] if a.startswith("--config.file="))
        path = config_arg.split("=", 1)[1]
        mount = next(m for m in self.container["volumeMounts"] if path.startswith(m["mountPath"] + "/"))
        volume = next(v for v in self.pod["spec"]["volumes"] if v["name"] == mount["name"])
        self.assertEqual(volume["configMap"]["name"], self.cm["metadata"]["name"])
        key = os.path.relpath(path, mount["mountPath"])
        self.assertIn(key, self.cm["data"])
        tmp = os.path.join(BUILD_DIR or "/tmp", "k8s-config.yaml")
        with open(tmp, "w") as f:
            f.write(self.cm["data"][key])
        p = subprocess.run([BINARY, "check-config", tmp], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def test_daemonset_flags_are_the_daemons(self):
        p = subprocess.run([BINARY, "--help"], capture_output=True, text=True, timeout=30)
        known = set(re.findall(r"(--[a-z][a-z0-9.-]+)", p.stdout))
        for arg in self.container["args"]:
            with self.subTest(arg=arg):
                self.assertIn(arg.split("=", 1)[0], known)

    def test_prometheusrule_is_the_shipped_rules_file(self):
        with open(os.path.join(SOURCE_DIR, "packaging", "prometheus", "rdma-healthd-alerts.yml")) as f:
            rules = yaml.safe_load(f)
        self.assertEqual(load("prometheusrule.yaml")["spec"], rules,
                         "run packaging/kubernetes/gen_prometheusrule.py")


if __name__ == "__main__":
    unittest.main()
