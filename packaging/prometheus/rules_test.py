"""The shipped Prometheus alert rules: valid, unit-tested with promtool, and true to the docs.

Run by ctest (PrometheusRules). Needs promtool (Debian's prometheus package) and PyYAML.
"""

import os
import re
import subprocess
import sys
import unittest

try:
    import yaml
except ImportError:  # an interpreter without PyYAML: Debian's own has python3-yaml
    if sys.executable != "/usr/bin/python3" and os.access("/usr/bin/python3", os.X_OK):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    raise

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.path.abspath(os.path.join(HERE, "..", ".."))
RULES = os.path.join(HERE, "rdma-healthd-alerts.yml")
RULE_TESTS = os.path.join(HERE, "rdma-healthd-alerts_test.yml")
RUNBOOK_PREFIX = "file:///usr/share/doc/rdma-healthd/checks.md#"

# Words in expressions that are PromQL, not metric names.
PROMQL_WORDS = {
    "max", "min", "avg", "sum", "count", "by", "on", "and", "or", "unless", "group_left",
    "group_right", "label_replace", "label_join", "increase", "rate", "ignoring", "without",
    "bool", "offset", "topk", "bottomk",
}


def read(path):
    with open(path) as f:
        return f.read()


def github_anchor(heading):
    """The anchor GitHub gives a Markdown heading: lower case, punctuation dropped, spaces to '-'."""
    text = heading.strip().lstrip("#").strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def alert_rules():
    doc = yaml.safe_load(read(RULES))
    return [r for g in doc["groups"] for r in g["rules"] if "alert" in r]


class PrometheusRulesTest(unittest.TestCase):
    def promtool(self, *args):
        p = subprocess.run(["promtool", *args], capture_output=True, text=True, timeout=120, cwd=HERE)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p.stdout

    def test_rules_are_valid(self):
        self.promtool("check", "rules", RULES)

    def test_promtool_unit_tests_pass(self):
        self.promtool("test", "rules", RULE_TESTS)

    def test_every_alert_is_tested_firing(self):
        tests = yaml.safe_load(read(RULE_TESTS))
        fired = {t["alertname"] for group in tests["tests"] for t in group.get("alert_rule_test", [])
                 if t.get("exp_alerts")}
        missing = sorted(r["alert"] for r in alert_rules() if r["alert"] not in fired)
        self.assertEqual(missing, [], "alerts with no promtool test in which they fire")

    def test_every_alert_has_severity_summary_description_runbook(self):
        for r in alert_rules():
            with self.subTest(alert=r["alert"]):
                self.assertIn(r.get("labels", {}).get("severity"), {"critical", "warning"})
                for key in ("summary", "description", "runbook_url"):
                    self.assertTrue(r.get("annotations", {}).get(key), key)

    def test_metrics_are_documented(self):
        documented = set(re.findall(r"^\| `([a-z_:]+)`", read(os.path.join(SOURCE_DIR, "docs", "metrics.md")), re.M))
        for r in alert_rules():
            expr = re.sub(r'"[^"]*"', '""', r["expr"])        # drop label values
            expr = re.sub(r"\{[^}]*\}", "", expr)             # and matchers
            expr = re.sub(r"\[[^\]]*\]", "", expr)            # and range selectors
            expr = re.sub(r"\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)", "", expr)  # label lists
            names = {w for w in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*", expr) if w not in PROMQL_WORDS}
            names -= {"up"}  # Prometheus' own
            with self.subTest(alert=r["alert"]):
                self.assertEqual(sorted(names - documented), [], "not in docs/metrics.md")

    def test_checks_and_runbook_anchors_exist_in_checks_doc(self):
        doc = read(os.path.join(SOURCE_DIR, "docs", "checks.md"))
        headings = re.findall(r"^#+ .*$", doc, re.M)
        anchors = {github_anchor(h) for h in headings}
        check_sections = set(re.findall(r"^### `([a-z0-9_]+)`", doc, re.M))
        for r in alert_rules():
            with self.subTest(alert=r["alert"]):
                for group in re.findall(r'check=~?"([^"]+)"', r["expr"]):
                    for name in group.split("|"):
                        self.assertIn(name, check_sections, "check named in the rule has no section")
                url = r["annotations"]["runbook_url"]
                self.assertTrue(url.startswith(RUNBOOK_PREFIX), url)
                anchor = url[len(RUNBOOK_PREFIX):]
                if "{{" not in anchor:
                    self.assertIn(anchor, anchors, "runbook anchor is no heading of docs/checks.md")


if __name__ == "__main__":
    unittest.main()
