"""End-to-end tests of the JSON API (/api/v1/checks, /api/v1/devices; docs/api.md): the same
document `check --output=json` prints, the devices of a captured node with their PFC/ECN/trust,
ETag and If-None-Match, TLS and basic auth as for /metrics, and a hostile tree (quotes, markup,
control characters, invalid UTF-8 in names and values) that still gives valid JSON.
Loopback only; each test makes its own temporary files."""

import http.client
import json
import os
import shutil
import subprocess
import tempfile
import unittest
import urllib.error
import urllib.request

from harness import SOURCE_DIR, Daemon, binary
from http_e2e_test import htpasswd, make_pki

PFC_OFF = os.path.join(SOURCE_DIR, "tests", "fixtures", "roce", "pfc-off")
DEGRADED = os.path.join(SOURCE_DIR, "tests", "fixtures", "sysfs", "degraded", "sys")
EMPTY_DCB = os.path.join(SOURCE_DIR, "tests", "fixtures", "empty-dcb")

# A device, a firmware string and a netdev named with what breaks naive JSON and HTML writers.
HOSTILE_DEVICE = b'mlx5_"q\'<img src=x onerror=document.title=1>\x01\x1b[31m\xff\xfe'
HOSTILE_FW = b'16.35.</script><script>window.pwned=1</script>"\\\x00\x7f\xc3\n'
HOSTILE_NETDEV = b'eth"<b>\xe2\x80\xae\xc0\xaf'


def pfc_off_args():
    f = PFC_OFF
    return [f"--path.sysfs={f}/sys", f"--path.procfs={f}/no-proc", f"--path.dcb={f}/dcb",
            f"--config.file={f}/config.yaml"]


def make_hostile_tree(tmp):
    """The degraded fixture with mlx5_0 renamed HOSTILE_DEVICE, its fw_ver HOSTILE_FW and the netdev
    its RoCE GIDs name HOSTILE_NETDEV. Returns the sysfs root."""
    sysfs = os.path.join(tmp, "sys")
    shutil.copytree(DEGRADED, sysfs, symlinks=True)
    cls = os.fsencode(os.path.join(sysfs, "class", "infiniband"))
    link = os.path.join(cls, b"mlx5_0")
    target = os.readlink(link)
    os.unlink(link)
    os.symlink(target, os.path.join(cls, HOSTILE_DEVICE))
    real = os.path.realpath(os.path.join(cls, HOSTILE_DEVICE))
    with open(os.path.join(real, b"fw_ver"), "wb") as f:
        f.write(HOSTILE_FW)
    ndevs = os.path.join(real, b"ports", b"1", b"gid_attrs", b"ndevs")
    for name in os.listdir(ndevs):
        with open(os.path.join(ndevs, name), "wb") as f:
            f.write(HOSTILE_NETDEV + b"\n")
    return sysfs


def get(port, path, headers=None):
    """(status, headers, body bytes) of GET http://127.0.0.1:PORT/path."""
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=20) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def strict_json(body):
    """The document, decoded as ASCII (the API writes \\uNNNN escapes) and parsed strictly."""
    return json.loads(body.decode("ascii"), parse_constant=lambda c: (_ for _ in ()).throw(ValueError(c)))


class ChecksApiTest(unittest.TestCase):
    def test_checks_is_the_document_check_prints(self):
        p = subprocess.run([binary(), "check", "--output=json", *pfc_off_args()], capture_output=True, timeout=60)
        self.assertEqual(p.returncode, 1, p.stderr)
        with Daemon(*pfc_off_args()) as d:
            status, headers, body = get(d.port, "/api/v1/checks")
        self.assertEqual(status, 200)
        self.assertEqual(headers.get("Content-Type"), "application/json")
        served, printed = strict_json(body), strict_json(p.stdout)
        self.assertEqual(served["schema_version"], 1)
        self.assertEqual(served["exit_code"], 1)
        # The pause-storm check needs two collections to judge growth: the daemon may have made
        # its second already, so that one verdict's reason may differ; everything else is equal.
        def without_storm(doc):
            doc = dict(doc)
            doc["verdicts"] = [v for v in doc["verdicts"] if v["check"] != "roce_pause_storm"]
            return doc
        self.assertEqual(without_storm(served), without_storm(printed))
        pfc = {v["subject"]: v["status"] for v in served["verdicts"] if v["check"] == "roce_pfc_priority"}
        self.assertEqual(pfc, {"ens1f0np0": "failed", "ens1f1np1": "ok"})

    def test_byte_for_byte_on_a_tree_without_growth_checks(self):
        args = [f"--path.sysfs={DEGRADED}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}"]
        p = subprocess.run([binary(), "check", "--output=json", *args], capture_output=True, timeout=60)
        with Daemon(*args) as d:
            status, _, body = get(d.port, "/api/v1/checks")
        self.assertEqual(status, 200)
        self.assertEqual(body, p.stdout)

    def test_etag_and_if_none_match(self):
        with Daemon(*pfc_off_args()) as d:
            for path in ("/api/v1/checks", "/api/v1/devices"):
                with self.subTest(path=path):
                    status, headers, body = get(d.port, path)
                    self.assertEqual(status, 200)
                    etag = headers.get("ETag")
                    self.assertRegex(etag or "", r'^W/"[0-9a-f]{16}"$')
                    self.assertEqual(headers.get("Cache-Control"), "no-cache")
                    status, headers, again = get(d.port, path, {"If-None-Match": etag})
                    self.assertEqual((status, again), (304, b""))
                    self.assertEqual(headers.get("ETag"), etag)
                    # Weak comparison, lists and "*".
                    for inm in (etag[2:], f'"nope", {etag}', "*"):
                        self.assertEqual(get(d.port, path, {"If-None-Match": inm})[0], 304, inm)
                    status, _, fresh = get(d.port, path, {"If-None-Match": 'W/"0000000000000000"'})
                    self.assertEqual(status, 200)
                    self.assertEqual(strict_json(fresh)["schema_version"], 1)
            # /metrics carries no ETag and ignores If-None-Match.
            status, headers, _ = get(d.port, "/metrics", {"If-None-Match": "*"})
            self.assertEqual(status, 200)
            self.assertIsNone(headers.get("ETag"))


class FilteredApiTest(unittest.TestCase):
    def test_filters_select_exactly_the_matching_verdicts(self):
        with Daemon(f"--path.sysfs={DEGRADED}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}") as d:
            status, headers, body = get(d.port, "/api/v1/checks")
            self.assertEqual(status, 200)
            whole = strict_json(body)
            self.assertNotIn("page", whole)
            verdicts = whole["verdicts"]
            device = strict_json(get(d.port, "/api/v1/devices")[2])["devices"][0]
            name = device["name"]
            owned = {name} | {f"{name}/{p['port']}" for p in device["ports"]}
            owned |= {n for p in device["ports"] for n in p["netdevs"]}
            cases = {
                "status=failed,warning": lambda v: v["status"] in ("failed", "warning"),
                f"device={name}": lambda v: v["subject"] in owned,
                f"check={verdicts[0]['check']}&status=unknown,ok,failed":
                    lambda v: v["check"] == verdicts[0]["check"] and v["status"] != "warning",
            }
            for query, pred in cases.items():
                with self.subTest(query=query):
                    status, headers, body = get(d.port, "/api/v1/checks?" + query)
                    self.assertEqual(status, 200)
                    self.assertEqual(headers.get("Content-Type"), "application/json")
                    self.assertRegex(headers.get("ETag") or "", r'^W/"[0-9a-f]{16}"$')
                    doc = strict_json(body)
                    want = [v for v in verdicts if pred(v)]
                    self.assertTrue(want)
                    self.assertEqual(doc["verdicts"], want)
                    self.assertEqual(doc["page"], {"total": len(want), "offset": 0, "limit": None,
                                                   "returned": len(want)})
                    self.assertEqual(doc["summary"], whole["summary"])
            doc = strict_json(get(d.port, "/api/v1/checks?offset=2&limit=3")[2])
            self.assertEqual(doc["verdicts"], verdicts[2:5])
            self.assertEqual(doc["page"], {"total": len(verdicts), "offset": 2, "limit": 3, "returned": 3})
            one = strict_json(get(d.port, f"/api/v1/devices?device={name}")[2])
            self.assertEqual([dev["name"] for dev in one["devices"]], [name])
            # Bad parameters: 400 naming the parameter, the request's markup never reflected.
            for path in ("/api/v1/checks?<script>=1", "/api/v1/checks?status=<b>", "/api/v1/checks?limit=0",
                         "/api/v1/checks?device=a&device=b", "/api/v1/devices?status=ok", "/?<i>x</i>=1",
                         "/?status=nope"):
                with self.subTest(path=path):
                    status, headers, body = get(d.port, path.replace("<", "%3C").replace(">", "%3E"))
                    self.assertEqual(status, 400)
                    self.assertTrue(headers.get("Content-Type").startswith("text/plain"))
                    self.assertIn(b"parameter", body)
                    self.assertNotIn(b"<", body)
            for path in ("/api/v1/checks?device=mlx5_%3Cb%3E", "/api/v1/devices?device=nope", "/?device=nope"):
                with self.subTest(path=path):
                    status, _, body = get(d.port, path)
                    self.assertEqual(status, 404)
                    self.assertIn(b"no device", body)
                    self.assertNotIn(b"<", body)


class DevicesApiTest(unittest.TestCase):
    def test_devices_ports_and_netdevs_with_qos(self):
        with Daemon(*pfc_off_args()) as d:
            status, _, body = get(d.port, "/api/v1/devices")
        self.assertEqual(status, 200)
        doc = strict_json(body)
        self.assertEqual(doc["schema_version"], 1)
        self.assertTrue(doc["devices_known"] and doc["netdevs_known"] and doc["qos_known"])
        sysfs = os.path.join(PFC_OFF, "sys", "class", "infiniband")
        self.assertEqual([dev["name"] for dev in doc["devices"]], sorted(os.listdir(sysfs)))
        for dev in doc["devices"]:
            real = os.path.realpath(os.path.join(sysfs, dev["name"]))
            with open(os.path.join(real, "fw_ver")) as f:
                self.assertEqual(dev["fw_ver"], f.read().strip())
            for port in dev["ports"]:
                pdir = os.path.join(real, "ports", str(port["port"]))
                with open(os.path.join(pdir, "state")) as f:
                    self.assertEqual(port["state"], f.read().split(":", 1)[1].strip())
                with open(os.path.join(pdir, "link_layer")) as f:
                    self.assertEqual(port["link_layer"], f.read().strip())
                with open(os.path.join(pdir, "rate")) as f:
                    gbps = float(f.read().split()[0])
                self.assertEqual(port["rate_bytes_per_second"], int(gbps * 1e9 / 8))
        netdevs = {n["name"]: n for n in doc["netdevs"]}
        # The capture: PFC on priority 4 only on ens1f0np0, on 3 on ens1f1np1; trust dscp on both;
        # ECN for the reaction point off on priority 3 of ens1f0np0.
        self.assertEqual(netdevs["ens1f0np0"]["pfc_priorities"], [4])
        self.assertEqual(netdevs["ens1f1np1"]["pfc_priorities"], [3])
        self.assertEqual({n: v["trust"] for n, v in netdevs.items() if n.startswith("ens")},
                         {"ens1f0np0": "dscp", "ens1f1np1": "dscp"})
        self.assertNotIn(3, netdevs["ens1f0np0"]["ecn_rp_priorities"])
        self.assertEqual(netdevs["ens1f0np0"]["mtu"], 1500)
        self.assertEqual(netdevs["ens1f1np1"]["ecn_np_priorities"], None)  # no roce_np folder: unknown
        self.assertIn("mlx5_0/1", netdevs["ens1f0np0"]["ports"])

    def test_unknown_is_null_not_zero(self):
        with Daemon(f"--path.sysfs={DEGRADED}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}") as d:
            doc = strict_json(get(d.port, "/api/v1/devices")[2])
        down = next(p for dev in doc["devices"] if dev["name"] == "mlx5_1" for p in dev["ports"])
        self.assertEqual(down["state"], "DOWN")
        for n in doc["netdevs"]:
            self.assertIsNone(n["pfc_priorities"], n)  # no DCB captured: unknown
            self.assertIsNone(n["trust"], n)


class HostileTreeTest(unittest.TestCase):
    def test_hostile_names_and_values_stay_valid_json(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs = make_hostile_tree(tmp)
            args = [f"--path.sysfs={sysfs}", "--path.procfs=/nonexistent-proc", f"--path.dcb={EMPTY_DCB}"]
            p = subprocess.run([binary(), "check", "--output=json", *args], capture_output=True, timeout=60)
            printed = strict_json(p.stdout)
            with Daemon(*args) as d:
                docs = {path: strict_json(get(d.port, path)[2]) for path in ("/api/v1/checks", "/api/v1/devices")}
        want_device = HOSTILE_DEVICE.decode("utf-8", "replace")
        names = [dev["name"] for dev in docs["/api/v1/devices"]["devices"]]
        self.assertIn(want_device, names)
        dev = next(dev for dev in docs["/api/v1/devices"]["devices"] if dev["name"] == want_device)
        self.assertTrue(dev["fw_ver"].startswith("16.35.</script><script>window.pwned=1</script>\"\\"), dev["fw_ver"])
        self.assertIn(HOSTILE_NETDEV.decode("utf-8", "replace"), dev["ports"][0]["netdevs"])
        subjects = {v["subject"] for v in docs["/api/v1/checks"]["verdicts"]}
        self.assertIn(want_device + "/1", subjects)
        self.assertEqual(docs["/api/v1/checks"]["verdicts"], printed["verdicts"])


class TlsAndAuthApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not (shutil.which("openssl") and shutil.which("htpasswd")):
            raise RuntimeError("needs openssl and htpasswd (apache2-utils): scripts/install-deps.sh test")
        cls.tmp = tempfile.TemporaryDirectory()
        make_pki(cls.tmp.name)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def test_api_behind_the_same_tls_and_basic_auth_as_metrics(self):
        import base64
        import ssl
        web = os.path.join(self.tmp.name, "web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n"
                    f"basic_auth_users:\n  prom: {htpasswd('prom', 'right horse')}\n")
        d = Daemon(*pfc_off_args(), f"--web.config.file={web}", wait_ready=False)
        d.__enter__()
        self.addCleanup(d.stop)
        ctx = ssl.create_default_context(cafile=os.path.join(self.tmp.name, "ca.crt"))

        def https(path, auth=None):
            conn = http.client.HTTPSConnection("127.0.0.1", d.port, context=ctx, timeout=20)
            headers = {}
            if auth:
                headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            conn.request("GET", path, headers=headers)
            r = conn.getresponse()
            body = r.read()
            conn.close()
            return r.status, body

        for path in ("/api/v1/checks", "/api/v1/devices"):
            with self.subTest(path=path):
                for auth in (None, ("prom", "wrong"), ("nobody", "right horse")):
                    status, body = https(path, auth)
                    self.assertEqual(status, 401, auth)
                    self.assertNotIn(b"schema_version", body)
                status, body = https(path, ("prom", "right horse"))
                self.assertEqual(status, 200)
                self.assertEqual(strict_json(body)["schema_version"], 1)
                # No plain HTTP on the TLS port.
                with self.assertRaises((OSError, http.client.HTTPException, urllib.error.URLError)):
                    status, _, _ = get(d.port, path)
                    if status != 200:
                        raise OSError(f"refused with {status}")


if __name__ == "__main__":
    unittest.main()
