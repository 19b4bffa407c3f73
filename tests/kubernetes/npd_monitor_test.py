"""packaging/kubernetes/node-problem-detector/rdma-healthd-monitor.json: node-problem-detector's
custom-plugin monitor config for rdma-healthd.

Checked against the custom-plugin schema as NPD declares it (pkg/custompluginmonitor/types:
CustomPluginConfig, pluginGlobalConfig, CustomRule; pkg/types: Condition) and as it validates it
(ApplyConfiguration, Validate): field names and types, "plugin" == "custom", Go durations, a rule
timeout no longer than the global one, a permanent rule's condition among the default conditions.
Unknown fields, which Go's decoder would silently drop, are failures here (a typo loses a setting).
Then the rule's command is run on fixture trees the way NPD runs it, and its exit code is read with
NPD's mapping (0 OK -> condition False, 1 NonOK -> True, anything else Unknown) and its stdout cut
as NPD cuts it (TrimSpace, then max_output_length bytes).
"""

import json
import os
import re
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", ".."))
MONITOR = os.path.join(SOURCE_DIR, "packaging", "kubernetes", "node-problem-detector", "rdma-healthd-monitor.json")
BINARY = os.environ.get("RDMAHD_BINARY", "")
FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures")

# The schema: field -> type, from NPD's Go structs (json tags).
TOP_LEVEL = {"plugin": str, "pluginConfig": dict, "source": str, "conditions": list, "rules": list,
             "metricsReporting": bool}
PLUGIN_CONFIG = {"invoke_interval": str, "timeout": str, "max_output_length": int, "concurrency": int,
                 "enable_message_change_based_condition_update": bool, "skip_initial_status": bool}
CONDITION = {"type": str, "status": str, "transition": str, "reason": str, "message": str}
RULE = {"type": str, "condition": str, "reason": str, "path": str, "args": list, "timeout": str,
        "invoke_interval": str}
# NPD's defaults (ApplyConfiguration) for what the file leaves out.
NPD_DEFAULT_TIMEOUT_S = 5.0
NPD_DEFAULT_MAX_OUTPUT = 80
# pkg/types: Type.
RULE_TYPES = {"temporary", "permanent"}

GO_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$")


def go_duration_seconds(text):
    if not GO_DURATION.match(text):
        raise ValueError(f"not a Go duration: {text!r}")
    scale = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
    return sum(float(n) * scale[u] for n, u in re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def sample_interval_seconds(args):
    """The rule's --sample-interval (0: one collection)."""
    values = [a.split("=", 1)[1] for a in args if a.startswith("--sample-interval=")]
    return go_duration_seconds(values[-1]) if values else 0.0


def npd_status(exit_code):
    """The condition status NPD sets for a permanent rule's exit code (toConditionStatus)."""
    return {0: "False", 1: "True"}.get(exit_code, "Unknown")


def npd_message(stdout, max_len):
    return stdout.strip()[:max_len]


class NpdMonitorConfigTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(MONITOR) as f:
            cls.cfg = json.load(f)

    def check_fields(self, obj, schema, where):
        self.assertIsInstance(obj, dict, where)
        for key, value in obj.items():
            self.assertIn(key, schema, f"{where}: unknown field {key!r} (NPD would ignore it)")
            want = schema[key]
            # bool is an int in Python; NPD's int fields take no JSON true/false.
            ok = isinstance(value, want) and not (want is int and isinstance(value, bool))
            self.assertTrue(ok, f"{where}.{key}: {value!r} is not a {want.__name__}")

    def test_schema(self):
        cfg = self.cfg
        self.check_fields(cfg, TOP_LEVEL, "config")
        for required in ("plugin", "source", "conditions", "rules"):
            self.assertIn(required, cfg)
        self.assertEqual(cfg["plugin"], "custom")  # Validate(): the only plugin NPD supports
        self.check_fields(cfg["pluginConfig"], PLUGIN_CONFIG, "pluginConfig")
        for key in ("invoke_interval", "timeout"):
            if key in cfg["pluginConfig"]:
                go_duration_seconds(cfg["pluginConfig"][key])
        for i, cond in enumerate(cfg["conditions"]):
            self.check_fields(cond, CONDITION, f"conditions[{i}]")
            for required in ("type", "reason", "message"):
                self.assertTrue(cond.get(required), f"conditions[{i}].{required}")
        self.assertTrue(cfg["rules"])
        for i, rule in enumerate(cfg["rules"]):
            self.check_fields(rule, RULE, f"rules[{i}]")
            self.assertIn(rule["type"], RULE_TYPES)
            self.assertTrue(all(isinstance(a, str) for a in rule["args"]))
            for key in ("timeout", "invoke_interval"):
                if key in rule:
                    go_duration_seconds(rule[key])

    def test_conditions_rules_and_timeouts_fit_together(self):
        cfg = self.cfg
        pc = cfg["pluginConfig"]
        global_timeout = go_duration_seconds(pc.get("timeout", f"{NPD_DEFAULT_TIMEOUT_S}s"))
        interval = go_duration_seconds(pc["invoke_interval"])
        conditions = {c["type"] for c in cfg["conditions"]}
        self.assertIn("RdmaUnhealthy", conditions)
        permanent = [r for r in cfg["rules"] if r["type"] == "permanent"]
        self.assertEqual([r["condition"] for r in permanent], ["RdmaUnhealthy"])
        for rule in cfg["rules"]:
            # Validate(): a rule's timeout may not exceed the global one.
            timeout = go_duration_seconds(rule.get("timeout", pc.get("timeout", "5s")))
            self.assertLessEqual(timeout, global_timeout)
            self.assertLess(timeout, interval, "a check must end before the next one starts")
            # The check takes two samples --sample-interval apart and waits at most
            # scrape.collection_timeout for each collection (5 s by default, the DaemonSet's config
            # does not change it): the timeout leaves room for both, the interval and the process'
            # start, so NPD never kills a check that would have answered. NPD's own default (5 s)
            # would not.
            sample = sample_interval_seconds(rule["args"])
            self.assertGreaterEqual(timeout, 2 * 5.0 + sample + 5.0)
            self.assertNotEqual(rule["reason"], next(c["reason"] for c in cfg["conditions"]))
        # The condition message is the summary line: it must not be cut shorter than it is.
        self.assertGreaterEqual(pc.get("max_output_length", NPD_DEFAULT_MAX_OUTPUT), 240)
        self.assertTrue(pc.get("enable_message_change_based_condition_update"),
                        "a different set of failing checks should update the condition")

    def test_command_is_the_containers_and_the_config_is_the_daemonsets(self):
        rule = self.cfg["rules"][0]
        with open(os.path.join(SOURCE_DIR, "packaging", "container", "Containerfile")) as f:
            self.assertIn(f'ENTRYPOINT ["{rule["path"]}"]', f.read())
        # (kubernetes_test.py checks the DaemonSet's args in depth; one flag is all this needs.)
        with open(os.path.join(SOURCE_DIR, "packaging", "kubernetes", "daemonset.yaml")) as f:
            config_args = re.findall(r"^\s*- (--config\.file=\S+)\s*$", f.read(), re.M)
        self.assertEqual(len(config_args), 1, config_args)
        self.assertIn(config_args[0], rule["args"])
        self.assertEqual(rule["args"][0], "check")
        self.assertIn("--output=summary", rule["args"])
        # Two samples, so that the error-rate checks judge rates (one collection leaves them unknown),
        # inside the per-minute window of the tightest limit (link_error_recovery).
        self.assertGreaterEqual(sample_interval_seconds(rule["args"]), 1.0)
        self.assertLess(sample_interval_seconds(rule["args"]), 60.0)

    def run_rule(self, *tree_args, config=None):
        """Runs the rule's command as NPD would (its args; the fixture paths and config added),
        bounded by the rule's timeout. Returns (exit code, NPD's message, seconds taken)."""
        if not BINARY:
            self.fail("RDMAHD_BINARY must name the built rdma-healthd (ctest sets it)")
        rule = self.cfg["rules"][0]
        args = [a for a in rule["args"] if not a.startswith("--config.file=")]
        if config:
            args.append(f"--config.file={config}")
        t0 = time.monotonic()
        p = subprocess.run([BINARY, *args, *tree_args], capture_output=True, text=True,
                           timeout=go_duration_seconds(rule["timeout"]))
        took = time.monotonic() - t0
        self.assertEqual(p.stdout.count("\n"), 1, p.stdout)  # one line
        self.assertTrue(all(0x20 <= ord(c) < 0x7f for c in p.stdout.strip()), p.stdout)
        max_len = self.cfg["pluginConfig"].get("max_output_length", NPD_DEFAULT_MAX_OUTPUT)
        self.assertLessEqual(len(p.stdout.strip()), max_len)
        return p.returncode, npd_message(p.stdout, max_len), took

    def test_exit_codes_map_to_npd_statuses_on_fixtures(self):
        f = os.path.join(FIXTURES, "roce", "pfc-off")
        code, message, _ = self.run_rule(f"--path.sysfs={f}/sys", f"--path.procfs={f}/no-proc",
                                         f"--path.dcb={f}/dcb", config=f"{f}/config.yaml")
        self.assertEqual((code, npd_status(code)), (1, "True"), message)
        self.assertTrue(message.startswith("RDMA unhealthy: "), message)
        self.assertIn("roce_pfc_priority ens1f0np0", message)

        with tempfile.TemporaryDirectory() as tmp:
            os.makedirs(os.path.join(tmp, "class", "infiniband"))  # RDMA core loaded, no device
            cfg = os.path.join(tmp, "ok.yaml")
            with open(cfg, "w") as out:
                out.write("ports:\n  require_roce_v2_gid: false\n")
            code, message, _ = self.run_rule(f"--path.sysfs={tmp}", f"--path.procfs={tmp}", f"--path.dcb={tmp}",
                                             config=cfg)
            self.assertEqual((code, npd_status(code)), (0, "False"), message)
            self.assertTrue(message.startswith("RDMA healthy: "), message)

            # A sysfs root that is no sysfs tree: the node cannot be judged.
            empty = os.path.join(tmp, "not-sysfs")
            os.mkdir(empty)
            code, message, _ = self.run_rule(f"--path.sysfs={empty}", f"--path.procfs={tmp}", f"--path.dcb={tmp}",
                                             config=cfg)
            self.assertEqual((code, npd_status(code)), (2, "Unknown"), message)
            self.assertTrue(message.startswith("RDMA health unknown: "), message)
            self.assertIn("class/infiniband does not exist", message)

    def test_a_bad_config_is_unknown_not_healthy(self):
        with tempfile.TemporaryDirectory() as tmp:
            cfg = os.path.join(tmp, "bad.yaml")
            with open(cfg, "w") as out:
                out.write("roce: {priority: 9}\n")
            rule = self.cfg["rules"][0]
            args = [a for a in rule["args"] if not a.startswith("--config.file=")]
            p = subprocess.run([BINARY, *args, f"--config.file={cfg}", f"--path.sysfs={tmp}"],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(npd_status(p.returncode), "Unknown", p.stdout + p.stderr)

    def test_could_not_run_says_why_on_stdout(self):
        """NPD takes the condition's message from stdout only: exit 2 (a missing config file, an
        invalid one, a bad flag) prints its reason there as one line, not only on stderr."""
        rule = self.cfg["rules"][0]
        max_len = self.cfg["pluginConfig"].get("max_output_length", NPD_DEFAULT_MAX_OUTPUT)
        with tempfile.TemporaryDirectory() as tmp:
            bad = os.path.join(tmp, "bad.yaml")
            with open(bad, "w") as out:
                out.write("roce: {priority: 9}\n")
            base = [a for a in rule["args"] if not a.startswith("--config.file=")]
            cases = {
                "missing config file": ([*base, f"--config.file={tmp}/missing.yaml"], "missing.yaml"),
                "invalid config file": ([*base, f"--config.file={bad}"], "bad.yaml"),
                "bad flag": ([*rule["args"], "--no-such-flag"], "--no-such-flag"),
            }
            for name, (args, named) in cases.items():
                with self.subTest(name):
                    p = subprocess.run([BINARY, *args, f"--path.sysfs={tmp}"], capture_output=True, text=True,
                                       timeout=30)
                    self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                    self.assertIn(named, p.stderr)
                    self.assertEqual(p.stdout.count("\n"), 1, p.stdout)
                    message = npd_message(p.stdout, max_len)
                    self.assertTrue(message.startswith("RDMA health unknown: "), message)
                    self.assertIn(named, message)
                    self.assertTrue(all(0x20 <= ord(c) < 0x7f for c in message), message)

    def test_error_rates_are_judged_within_the_timeout(self):
        """The rule's two samples let the error-rate checks judge (one collection leaves them
        unknown, "a rate needs two samples"), and the whole check ends inside NPD's timeout."""
        if not BINARY:
            self.fail("RDMAHD_BINARY must name the built rdma-healthd (ctest sets it)")
        rule = self.cfg["rules"][0]
        f = os.path.join(FIXTURES, "roce", "pfc-off")
        args = [a for a in rule["args"] if not a.startswith("--config.file=") and a != "--output=summary"]
        tree = [f"--path.sysfs={f}/sys", f"--path.procfs={f}/no-proc", f"--path.dcb={f}/dcb",
                f"--config.file={f}/config.yaml"]
        timeout = go_duration_seconds(rule["timeout"])
        t0 = time.monotonic()
        p = subprocess.run([BINARY, *args, "--output=json", *tree], capture_output=True, text=True, timeout=timeout)
        took = time.monotonic() - t0
        self.assertLess(took, timeout)
        self.assertGreaterEqual(took, sample_interval_seconds(rule["args"]))
        doc = json.loads(p.stdout)
        rates = [v for v in doc["verdicts"] if v["check"] in ("port_errors", "roce_transport_errors", "netdev_errors")]
        self.assertTrue(rates, "the fixture has error counters")
        for v in rates:
            self.assertNotIn("two samples", v["reason"], v)


if __name__ == "__main__":
    unittest.main()
