"""The status page at / in a real browser: Debian's headless Chromium, driven over WebDriver
(chromedriver, the W3C protocol spoken with urllib), loads it from a daemon on a fixture tree. The
tests assert on the rendered DOM (verdicts worst first with reason and fix, unknown with why, ok
folded, devices/netdevs with PFC/ECN/trust, the daemon's health, the link to /metrics), on the
layout at 1366x768 and on a phone (nothing wider than the screen but the tables' own scroll boxes),
and keep screenshots as artifacts (their paths are printed). A hostile tree (markup, quotes,
control characters and invalid UTF-8 in names) renders inert: its names show as text, no element
or script of theirs exists or ran. Loopback only."""

import base64
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
import urllib.error
import urllib.request

from api_e2e_test import EMPTY_DCB, make_hostile_tree, pfc_off_args
from harness import SOURCE_DIR, Daemon

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"
PHONE = {"width": 390, "height": 844, "pixelRatio": 3}


def artifact_dir():
    base = os.environ.get("RDMAHD_BUILD_DIR") or tempfile.gettempdir()
    path = os.path.join(base, "test-artifacts", "status-page")
    os.makedirs(path, exist_ok=True)
    return path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Browser:
    """One chromedriver and one headless Chromium session (W3C WebDriver over HTTP on loopback)."""

    def __init__(self, phone=False, profile_dir=None):
        self.port = free_port()
        self.driver = subprocess.Popen([CHROMEDRIVER, f"--port={self.port}"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL)
        args = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                "--no-first-run", "--disable-extensions", f"--user-data-dir={profile_dir}"]
        options = {"binary": CHROMIUM, "args": args}
        if phone:
            options["mobileEmulation"] = {"deviceMetrics": PHONE}
        else:
            args.append("--window-size=1366,768")
        deadline = time.monotonic() + 20
        while True:
            try:
                self.session = self.call("POST", "/session", {"capabilities": {"alwaysMatch": {
                    "browserName": "chrome", "goog:chromeOptions": options}}})["sessionId"]
                break
            except (urllib.error.URLError, OSError):
                if time.monotonic() > deadline or self.driver.poll() is not None:
                    self.close()
                    raise
                time.sleep(0.1)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return json.loads(r.read())["value"]
        except urllib.error.HTTPError as e:
            raise AssertionError(f"WebDriver {method} {path}: {e.code} {e.read()[:500]!r}") from None

    def open(self, url):
        self.call("POST", f"/session/{self.session}/url", {"url": url})

    def js(self, script, *args):
        return self.call("POST", f"/session/{self.session}/execute/sync", {"script": script, "args": list(args)})

    def screenshot(self, path):
        with open(path, "wb") as f:
            f.write(base64.b64decode(self.call("GET", f"/session/{self.session}/screenshot")))
        return path

    def close(self):
        try:
            if getattr(self, "session", None):
                self.call("DELETE", f"/session/{self.session}")
        except (AssertionError, OSError, urllib.error.URLError):
            pass
        if self.driver.poll() is None:
            self.driver.terminate()
            try:
                self.driver.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.driver.kill()
                self.driver.wait()


# What the tests read from the rendered page, in one round trip.
READ_PAGE = """
const rows = sel => Array.from(document.querySelectorAll(sel)).map(tr =>
  Array.from(tr.cells).map(td => td.textContent));
return {
  title: document.title,
  headline: (document.getElementById('verdict') || {}).textContent,
  problems: rows('#t-problems tbody tr'),
  unknown: rows('#t-unknown tbody tr'),
  okOpen: document.getElementById('ok').open,
  okRows: rows('#t-ok tbody tr'),
  devices: rows('#t-ports tbody tr'),
  netdevs: rows('#t-netdevs tbody tr'),
  daemon: (document.getElementById('daemon').nextElementSibling || {}).textContent,
  links: Array.from(document.querySelectorAll('a')).map(a => a.getAttribute('href')),
  scripts: document.scripts.length,
  imgs: document.images.length,
  onerror: document.querySelectorAll('[onerror]').length,
  bodyText: document.body.innerText,
  pwned: typeof window.pwned,
  scrollWidth: document.documentElement.scrollWidth,
  innerWidth: window.innerWidth,
  // Everything wider than the viewport that is not inside a table's scroll box.
  overflowing: Array.from(document.querySelectorAll('body *')).filter(e =>
    !e.closest('.scroll') && e.getBoundingClientRect().right > window.innerWidth + 1).map(e => e.tagName),
  fontPx: parseFloat(getComputedStyle(document.body).fontSize),
};
"""


# Every place where a line of a fix cell wraps: the characters either side of each break.
LINE_BREAKS = """
const breaks = [];
for (const code of document.querySelectorAll(arguments[0])) {
  const walker = document.createTreeWalker(code, NodeFilter.SHOW_TEXT);
  const chars = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (let i = 0; i < node.data.length; i++) {
      const r = document.createRange();
      r.setStart(node, i);
      r.setEnd(node, i + 1);
      const rect = r.getClientRects()[0];
      if (rect) chars.push([node.data[i], rect.top, rect.height]);
    }
  }
  for (let i = 1; i < chars.length; i++) {
    if (chars[i][1] > chars[i - 1][1] + chars[i - 1][2] / 2) {
      breaks.push(chars[i - 1][0] + '|' + chars[i][0] + ' in ' + code.textContent.slice(0, 60));
    }
  }
}
return breaks;
"""


def readiness_node_with_a_fatal_nic(tmp):
    """tests/fixtures/host/device-readiness with a fatal firmware error of mlx5_0 in its kernel log:
    a hardware failure (nic_health), a degraded PCIe link (pcie_link), configuration failures
    (kernel_modules, device_access on two device nodes, roce_tos) and warnings. Returns the flags."""
    node = os.path.join(tmp, "node")
    shutil.copytree(os.path.join(SOURCE_DIR, "tests", "fixtures", "host", "device-readiness"), node, symlinks=True)
    with open(os.path.join(node, "dmesg.txt")) as f:
        lines = f.read().splitlines(keepends=True)
    fatal = "[ 7100.000000] mlx5_core 0000:3b:00.0: poll_health:478:(pid 0): Fatal error 1 detected\n"
    with open(os.path.join(node, "dmesg.txt"), "w") as f:
        f.writelines(lines[:4] + [fatal] + lines[4:])
    return [f"--path.sysfs={node}/sys", f"--path.procfs={node}/proc", f"--path.dcb={node}/dcb",
            f"--path.dev={node}/dev", f"--path.kmsg={node}/dmesg.txt", f"--config.file={node}/config.yaml"]


class StatusPageBrowserTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in (CHROMIUM, CHROMEDRIVER):
            if not os.access(tool, os.X_OK):
                raise RuntimeError(f"needs {tool} (chromium, chromium-driver): scripts/install-deps.sh test")
        cls.tmp = tempfile.TemporaryDirectory()
        cls.artifacts = artifact_dir()

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def browser(self, phone=False):
        profile = tempfile.mkdtemp(dir=self.tmp.name)
        b = Browser(phone=phone, profile_dir=profile)
        self.addCleanup(b.close)
        return b

    def keep(self, browser, name):
        path = browser.screenshot(os.path.join(self.artifacts, name))
        with open(path, "rb") as f:
            self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")
        print(f"\nscreenshot: {path}", flush=True)
        return path

    def test_verdicts_devices_and_daemon_on_a_captured_node(self):
        with Daemon(*pfc_off_args()) as d:
            b = self.browser()
            b.open(f"http://127.0.0.1:{d.port}/")
            page = b.js(READ_PAGE)
            self.keep(b, "pfc-off-1366x768.png")
        self.assertTrue(page["title"].startswith("rdma-healthd on "), page["title"])
        self.assertRegex(page["headline"], r"^Unhealthy: \d+ failed, \d+ warning")
        # Failed first, then warning; each with its reason and fix.
        statuses = [r[0] for r in page["problems"]]
        self.assertTrue(statuses and set(statuses) <= {"failed", "warning"}, statuses)
        self.assertEqual(statuses, sorted(statuses, key=lambda s: s != "failed"), statuses)
        pfc = next(r for r in page["problems"] if r[1] == "roce_pfc_priority")
        self.assertEqual(pfc[:3], ["failed", "roce_pfc_priority", "ens1f0np0"])
        self.assertIn("PFC is off on RoCE priority 3", pfc[3])
        self.assertEqual(pfc[4], "dcb pfc set dev ens1f0np0 prio-pfc 3:on")
        # Unknown with why; ok folded.
        ecn = next(r for r in page["unknown"] if r[1] == "roce_ecn")
        self.assertEqual(ecn[:3], ["unknown", "roce_ecn", "ens1f1np1"])
        self.assertIn("ens1f1np1/ecn/roce_np/enable/3", ecn[3])
        self.assertFalse(page["okOpen"])
        self.assertIn(["ok", "roce_pfc_priority", "ens1f1np1"], [r[:3] for r in page["okRows"]])
        self.assertNotIn("roce_trust", page["bodyText"])  # every roce_trust verdict is ok: folded away
        # Devices, ports and netdevs at a glance.
        ports = {r[0]: r for r in page["devices"]}
        self.assertIn("mlx5_0/1", ports)
        self.assertEqual(ports["mlx5_0/1"][1:3], ["Ethernet", "ACTIVE"])
        netdevs = {r[0]: r for r in page["netdevs"]}
        self.assertEqual(netdevs["ens1f0np0"][5:7], ["4", "dscp"])  # PFC on 4 only, trust dscp
        self.assertEqual(netdevs["ens1f1np1"][5], "3")
        self.assertEqual(netdevs["ens1f0np0"][3], "1500")
        # The daemon's own health; the links.
        for word in ("version", "uptime", "last reload", "configuration"):
            self.assertIn(word, page["daemon"])
        self.assertIn("/metrics", page["links"])
        self.assertIn("/api/v1/checks", page["links"])
        self.assertEqual(page["scripts"], 0)  # works without JavaScript: there is none
        self.assertEqual(page["overflowing"], [], "wider than 1366 px outside the tables' scroll boxes")
        self.assertLessEqual(page["scrollWidth"], page["innerWidth"])

    def test_readable_on_a_phone(self):
        with Daemon(*pfc_off_args()) as d:
            b = self.browser(phone=True)
            b.open(f"http://127.0.0.1:{d.port}/")
            page = b.js(READ_PAGE)
            self.keep(b, "pfc-off-phone.png")
        self.assertEqual(page["innerWidth"], PHONE["width"])  # the viewport meta is honoured
        self.assertEqual(page["overflowing"], [], "wider than the phone outside the tables' scroll boxes")
        self.assertLessEqual(page["scrollWidth"], page["innerWidth"])
        self.assertGreaterEqual(page["fontPx"], 14)
        self.assertRegex(page["headline"], r"^Unhealthy: ")

    def test_costliest_first_grouped_and_fixes_wrap_between_words_on_a_phone(self):
        flags = readiness_node_with_a_fatal_nic(tempfile.mkdtemp(dir=self.tmp.name))
        with Daemon(*flags) as d:
            b = self.browser(phone=True)
            b.open(f"http://127.0.0.1:{d.port}/")
            page = b.js(READ_PAGE)
            breaks = b.js(LINE_BREAKS, "#t-problems code")
            costs = b.js("return Array.from(document.querySelectorAll('#t-problems tr.verdict-row'))"
                         ".map(tr => [tr.dataset.status, tr.dataset.cost]);")
            unknown_open = b.js("return document.getElementById('unknown').open;")
            self.keep(b, "costliest-first-phone.png")
        problems = page["problems"]
        # Failed before warning; within each, hardware, then degrading, then configuration.
        self.assertEqual([r[:3] for r in problems[:2]], [["failed", "nic_health", "mlx5_0"],
                                                         ["failed", "pcie_link", "mlx5_1"]], problems)
        rank = {"hardware": 0, "degrading": 1, "configuration": 2}
        keys = [(s != "failed", rank[c]) for s, c in costs]
        self.assertEqual(keys, sorted(keys), costs)
        # The two device nodes that fail the same way are one row naming both.
        uverbs = next(r for r in problems if r[1] == "device_access" and "uverbs0" in r[2])
        self.assertEqual(uverbs[2], "/dev/infiniband/uverbs0, /dev/infiniband/uverbs1")
        self.assertEqual(uverbs[3], "<subject> is not a character device")
        # Unknown and ok folded, counted in the headline.
        self.assertFalse(unknown_open)
        self.assertFalse(page["okOpen"])
        self.assertRegex(page["headline"], r"^Unhealthy: \d+ failed, \d+ warning \u00b7 \d+ ok, \d+ unknown$")
        # Long fixes wrap (there are breaks) but never inside a word, and nothing is wider than the phone.
        self.assertTrue(breaks, "no fix wrapped: the test shows nothing")
        word = lambda c: c.isalnum() or c == "_"
        inside = [b for b in breaks if word(b[0]) and word(b[2])]
        self.assertEqual(inside, [], breaks)
        self.assertEqual(page["overflowing"], [], "wider than the phone outside the tables' scroll boxes")
        self.assertLessEqual(page["scrollWidth"], page["innerWidth"])

    def test_hostile_tree_renders_inert(self):
        tree = make_hostile_tree(tempfile.mkdtemp(dir=self.tmp.name))
        with Daemon(f"--path.sysfs={tree}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}") as d:
            with urllib.request.urlopen(f"http://127.0.0.1:{d.port}/", timeout=20) as r:
                raw = r.read()
            b = self.browser()
            b.open(f"http://127.0.0.1:{d.port}/")
            time.sleep(0.5)  # an injected onerror would have fired by now
            page = b.js(READ_PAGE)
            self.keep(b, "hostile-1366x768.png")
        raw.decode("utf-8")  # strict: the page is valid UTF-8 whatever the tree held
        self.assertNotIn(b"<img", raw)
        self.assertNotIn(b"<script", raw)
        self.assertTrue(page["title"].startswith("rdma-healthd on "), page["title"])  # onerror did not set it
        self.assertEqual((page["scripts"], page["imgs"], page["onerror"], page["pwned"]), (0, 0, 0, "undefined"))
        # The names show as text, escapes visible.
        shown = 'mlx5_"q\'<img src=x onerror=document.title=1>\\x01\\x1b[31m\\xff\\xfe/1'
        self.assertIn(shown, [r[0] for r in page["devices"]])
        self.assertIn("16.35.</script><script>window.pwned=1</script>", page["bodyText"])
        self.assertIn('eth"<b>\\u202e\\xc0\\xaf', page["bodyText"])
        self.assertIn(shown, page["bodyText"])


if __name__ == "__main__":
    unittest.main()
