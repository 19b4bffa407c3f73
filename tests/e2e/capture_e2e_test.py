"""End-to-end tests of the support bundle: `rdma-healthd capture` of a captured fixture tree, then
`rdma-healthd check --capture` of the bundle gives the verdicts `check` gives on the tree itself; the
bundle holds the node's own verdicts, metrics, a redacted config and a manifest; a hostile bundle is
refused before anything is judged. Every test works in its own temporary folder."""

import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from harness import SOURCE_DIR, Daemon, binary

FIXTURES = os.path.join(SOURCE_DIR, "tests", "fixtures")


def verdicts(document):
    return [(v["check"], v["subject"], v["status"], v.get("reason"), v.get("fix")) for v in document["verdicts"]]


def run(*args, cwd=None, env=None):
    return subprocess.run([binary(), *args], capture_output=True, text=True, timeout=120, cwd=cwd,
                          env=dict(os.environ, **(env or {})))


class CaptureRoundTrip(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdmahd-capture-e2e-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def fixture(self, rel):
        dst = os.path.join(self.tmp, "node")
        shutil.copytree(os.path.join(FIXTURES, rel), dst, symlinks=True)
        return dst

    def flags(self, node):
        """The --path.* and --config.file flags for what the fixture holds."""
        out = [f"--path.sysfs={node}/sys"]
        out.append(f"--path.procfs={node}/proc" if os.path.isdir(f"{node}/proc") else "--path.procfs=/nonexistent-proc")
        if os.path.isdir(f"{node}/dcb"):
            out.append(f"--path.dcb={node}/dcb")
        if os.path.isfile(f"{node}/dmesg.txt"):
            out.append(f"--path.kmsg={node}/dmesg.txt")
        if os.path.isfile(f"{node}/config.yaml"):
            out.append(f"--config.file={node}/config.yaml")
        return out

    def round_trip(self, rel):
        node = self.fixture(rel)
        flags = self.flags(node)
        direct = run("check", "--output=json", *flags)
        self.assertIn(direct.returncode, (0, 1), direct.stderr)
        bundle = os.path.join(self.tmp, "bundle.tar.gz")
        cap = run("capture", f"--output={bundle}", *flags)
        self.assertEqual(cap.returncode, 0, cap.stderr)
        self.assertIn("wrote", cap.stdout)
        # Judged elsewhere: the fixture is gone, only the bundle is left (and its own config is used).
        shutil.rmtree(node)
        # Extracted under a folder of ours, to see that nothing printed names it (it is gone after).
        extract_base = os.path.join(self.tmp, "extract-here")
        os.mkdir(extract_base)
        judged = run("check", "--output=json", f"--capture={bundle}", env={"TMPDIR": extract_base})
        self.assertEqual(judged.returncode, direct.returncode, judged.stderr)
        self.assertNotIn(extract_base, judged.stdout)
        self.assertEqual(os.listdir(extract_base), [])
        table = run("check", f"--capture={bundle}", env={"TMPDIR": extract_base})
        self.assertNotIn(extract_base, table.stdout)
        want, got = json.loads(direct.stdout), json.loads(judged.stdout)
        self.assertGreater(len(want["verdicts"]), 5)
        self.assertEqual(verdicts(got), verdicts(want))
        with tarfile.open(bundle) as tar:
            node_check = json.load(tar.extractfile("check.json"))
            manifest = json.load(tar.extractfile("manifest.json"))
            metrics = tar.extractfile("metrics.txt").read().decode()
            members = [m for m in tar.getmembers() if m.name != "manifest.json"]
        # Files are files: folders and links are counted apart.
        self.assertEqual(manifest["files"], sum(m.isfile() for m in members))
        self.assertEqual(manifest["folders"], sum(m.isdir() for m in members))
        self.assertEqual(manifest["links"], sum(m.issym() for m in members))
        # The node's own verdicts, in the bundle, are the same too.
        self.assertEqual(verdicts(node_check), verdicts(want))
        self.assertEqual(manifest["format"], "rdma-healthd-capture")
        self.assertEqual(manifest["node_verdict_exit_code"], direct.returncode)
        self.assertIn("rdma_healthd", manifest["versions"])
        self.assertTrue("\nrdma_check_status{" in metrics, "metrics.txt has no rdma_check_status")
        return want, manifest

    def test_device_readiness_host_same_verdicts(self):
        want, manifest = self.round_trip(os.path.join("host", "device-readiness"))
        statuses = {v["status"] for v in want["verdicts"]}
        self.assertTrue({"ok", "warning", "failed"} <= statuses, statuses)  # a fixture worth comparing
        self.assertFalse(manifest["live"])
        # A fixture tree: not this machine's kernel (its procfs names none).
        self.assertIsNone(manifest["versions"]["kernel_release"])
        self.assertIsNone(manifest["versions"]["kernel_version"])
        self.assertIsNone(manifest["hostname"])
        self.assertNotIn(os.uname().version, json.dumps(manifest))

    def test_roce_pfc_off_same_verdicts(self):
        want, _ = self.round_trip(os.path.join("roce", "pfc-off"))
        self.assertIn("failed", {v["status"] for v in want["verdicts"]})

    def test_numa_misplaced_host_same_verdicts(self):
        self.round_trip(os.path.join("host", "numa-misplaced"))

    def test_config_secrets_are_redacted(self):
        node = self.fixture(os.path.join("roce", "pfc-off"))
        secret_hash = "$2y$10$X8ktMYbWqTXfa6pZmTNXXuXBvd1OZ3hWK9QC4WzWf6W7xQ0u9tF6e"
        web = os.path.join(self.tmp, "web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: /etc/tls.crt\n  key_file: /etc/private/tls.key\n"
                    f"basic_auth_users:\n  prometheus: '{secret_hash}'\n")
        bundle = os.path.join(self.tmp, "b.tar.gz")
        cap = run("capture", f"--output={bundle}", f"--web.config.file={web}", *self.flags(node))
        self.assertEqual(cap.returncode, 0, cap.stderr)
        with open(bundle, "rb") as f:
            raw = f.read()
        with tarfile.open(bundle) as tar:
            text = b"".join(tar.extractfile(m).read() for m in tar.getmembers() if m.isfile())
            redacted = tar.extractfile("config/web-config.yaml").read().decode()
        self.assertNotIn(secret_hash.encode(), text)
        self.assertNotIn(b"/etc/private/tls.key", text)
        self.assertNotIn(secret_hash.encode(), raw)
        self.assertIn("/etc/tls.crt", redacted)
        self.assertIn("<redacted>", redacted)

    def test_serving_daemon_does_not_load_libarchive(self):
        """libarchive (and the libxml2 and ICU it brings, about 1 MiB resident) is loaded only by a
        command that makes or reads a bundle, never by the daemon serving /metrics."""
        node = self.fixture(os.path.join("roce", "pfc-off"))
        with Daemon(*self.flags(node)) as d:
            self.assertIn("rdma_check_status", d.get("/metrics")[2])
            with open(f"/proc/{d.proc.pid}/maps") as f:
                maps = f.read()
        self.assertIn("libc.so", maps)  # the maps are the daemon's
        self.assertNotIn("libarchive", maps)
        self.assertNotIn("libxml2", maps)

    def test_existing_output_is_not_overwritten(self):
        node = self.fixture(os.path.join("roce", "pfc-off"))
        bundle = os.path.join(self.tmp, "b.tar.gz")
        with open(bundle, "w") as f:
            f.write("keep me")
        cap = run("capture", f"--output={bundle}", *self.flags(node))
        self.assertEqual(cap.returncode, 2)
        self.assertIn("exists", cap.stderr)
        with open(bundle) as f:
            self.assertEqual(f.read(), "keep me")

    def hostile(self, add):
        bundle = os.path.join(self.tmp, "hostile.tar.gz")
        with tarfile.open(bundle, "w:gz") as tar:
            add(tar)
        # The extraction folder is made under TMPDIR: a private one, to see that it is removed.
        return run("check", "--output=json", f"--capture={bundle}", cwd=self.tmp, env={"TMPDIR": self.scratch})

    @staticmethod
    def member(tar, name, data=b"", kind=tarfile.REGTYPE, link=""):
        info = tarfile.TarInfo(name)
        info.type = kind
        info.linkname = link
        info.size = len(data) if kind == tarfile.REGTYPE else 0
        tar.addfile(info, io.BytesIO(data) if kind == tarfile.REGTYPE else None)

    def test_hostile_bundles_are_refused(self):
        self.scratch = os.path.join(self.tmp, "scratch")
        os.mkdir(self.scratch)
        cases = {
            "dotdot": (lambda t: self.member(t, "sys/../../escaped", b"x"), '".." component'),
            "absolute": (lambda t: self.member(t, os.path.join(self.tmp, "abs-escaped"), b"x"), "absolute path"),
            "link": (lambda t: self.member(t, "sys/class/net/eth0", kind=tarfile.SYMTYPE, link="../../../../etc"),
                     "points out of the capture"),
            "device": (lambda t: self.member(t, "dev/null", kind=tarfile.CHRTYPE), "not a regular file"),
            "oversize": (lambda t: self.member(t, "kernel-log.txt", b"\0" * (17 << 20)), "bigger than"),
        }
        for name, (add, why) in cases.items():
            with self.subTest(name):
                r = self.hostile(add)
                self.assertEqual(r.returncode, 2, r.stdout)
                self.assertIn(why, r.stderr)
                # Nothing judged: the one line saying why (node-problem-detector reads stdout).
                self.assertTrue(r.stdout.startswith("RDMA health unknown: "), r.stdout)
                self.assertEqual(r.stdout.count("\n"), 1, r.stdout)
                self.assertIn(why, r.stdout)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "escaped")))
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "abs-escaped")))
                # What was extracted before the refusal is removed with its folder.
                self.assertEqual(os.listdir(self.scratch), [])


if __name__ == "__main__":
    unittest.main()
