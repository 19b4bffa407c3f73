"""End-to-end tests of the support bundle: `rdma-healthd capture` of a captured fixture tree, then
`rdma-healthd check --capture` of the bundle gives the verdicts `check` gives on the tree itself; the
bundle holds the node's own verdicts, metrics, a redacted config and a manifest; a hostile bundle is
refused before anything is judged. Every test works in its own temporary folder."""

import glob
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time
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
        # The web config is carried only as the settings the daemon loads, so its files must load.
        private = os.path.join(self.tmp, "private")
        os.mkdir(private)
        with open(os.path.join(self.tmp, "tls.crt"), "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
        with open(os.path.join(private, "tls.key"), "w") as f:
            f.write("-----BEGIN PRIVATE KEY-----\nKEYMATERIAL\n-----END PRIVATE KEY-----\n")
        web = os.path.join(self.tmp, "web.yml")
        with open(web, "w") as f:
            f.write("tls_server_config:\n  cert_file: tls.crt\n  key_file: private/tls.key\n"
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
        self.assertNotIn(b"private/tls.key", text)
        self.assertNotIn(b"KEYMATERIAL", text)
        self.assertNotIn(secret_hash.encode(), raw)
        self.assertIn(os.path.join(self.tmp, "tls.crt"), redacted)
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


def du_bytes(path):
    """Bytes the files under `path` take on disk (st_blocks), folders included."""
    total = 0
    for root, dirs, files in os.walk(path):
        for n in dirs + files:
            try:
                total += os.lstat(os.path.join(root, n)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


class BigBundle(unittest.TestCase):
    """A bundle of a generated 200-device tree (bench/gen_tree.py): about 1.7 MB that extracts to
    about 235 MiB and takes seconds to extract and to judge, so that a signal or a missed deadline
    arrives while `check --capture` holds its extraction (issue 41 item 2), and a capture runs long
    enough for its output to be raced (item 6)."""

    @classmethod
    def setUpClass(cls):
        cls.base = tempfile.mkdtemp(prefix="rdmahd-capture-big-e2e-")
        cls.node = os.path.join(cls.base, "node")
        subprocess.run([sys.executable, os.path.join(SOURCE_DIR, "bench", "gen_tree.py"), cls.node,
                        "--devices", "200"], check=True, capture_output=True)
        cls.node_flags = [f"--path.sysfs={cls.node}/sys", "--path.procfs=/nonexistent-proc",
                          f"--path.dcb={cls.node}/dcb"]
        cls.bundle = os.path.join(cls.base, "big.tar.gz")
        cap = run("capture", f"--output={cls.bundle}", *cls.node_flags)
        assert cap.returncode == 0, cap.stderr

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.base, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdmahd-capture-e2e-", dir=self.base)
        self.scratch = os.path.join(self.tmp, "scratch")  # the TMPDIR of the command
        os.mkdir(self.scratch)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *args):
        return subprocess.Popen([binary(), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, TMPDIR=self.scratch))

    def test_signal_while_judging_removes_the_extraction(self):
        for sig in (signal.SIGTERM, signal.SIGINT):
            with self.subTest(sig.name):
                # A second collection 60 s later (--sample-interval): the command waits with the
                # bundle extracted.
                p = self.start("check", f"--capture={self.bundle}", "--sample-interval=60s")
                deadline = time.monotonic() + 60
                while not glob.glob(os.path.join(self.scratch, "*", "manifest.json")):
                    self.assertIsNone(p.poll(), p.stderr.read() if p.poll() is not None else "")
                    self.assertLess(time.monotonic(), deadline, "the bundle was never extracted")
                    time.sleep(0.05)
                time.sleep(1.0)  # extracted and being judged
                self.assertGreater(du_bytes(self.scratch), 50 << 20)
                p.send_signal(sig)
                p.communicate(timeout=60)
                self.assertEqual(p.returncode, -sig)  # dies of the signal, as without a handler
                self.assertEqual(os.listdir(self.scratch), [])

    def test_collection_past_its_deadline_removes_the_extraction(self):
        """A collector still running at the collection deadline: the process leaves through _Exit,
        running no destructor; the extraction is removed before."""
        config = os.path.join(self.tmp, "config.yaml")
        with open(config, "w") as f:
            f.write("scrape:\n  collection_timeout: 100ms\n")
        # Whether the 200 devices' discovery is still running when the command is done depends on
        # the machine's load: one run (a judged 200-device bundle costs ~35 s here), which must
        # leave nothing, and through _Exit or the test says it skipped that path.
        exits = 0
        for _ in range(1):
            p = self.start("check", f"--capture={self.bundle}", f"--config.file={config}", "--output=summary")
            out, err = p.communicate(timeout=120)
            self.assertEqual(p.returncode, 2, out)
            self.assertEqual(os.listdir(self.scratch), [])
            exits += "leaving without waiting for a collector that is still running" in err  # the _Exit path
            if exits:
                break
        if not exits:
            self.skipTest("no run left through _Exit on this machine (the discovery finished in time)")

    def test_output_created_while_capturing_is_not_replaced(self):
        out = os.path.join(self.tmp, "b.tar.gz")
        p = self.start("capture", f"--output={out}", *self.node_flags)
        time.sleep(0.5)
        self.assertIsNone(p.poll(), "the capture ended before the race")
        with open(out, "w") as f:
            f.write("keep me")
        _, err = p.communicate(timeout=120)
        self.assertEqual(p.returncode, 2, err)
        self.assertIn("was created while the capture ran: left as it is", err)
        with open(out) as f:
            self.assertEqual(f.read(), "keep me")
        self.assertEqual(sorted(os.listdir(self.tmp)), ["b.tar.gz", "scratch"])  # no temporary left

    def test_capture_killed_leaves_nothing_and_a_leftover_partial_blocks_nothing(self):
        out = os.path.join(self.tmp, "b.tar.gz")
        p = self.start("capture", f"--output={out}", *self.node_flags)
        time.sleep(0.5)
        p.send_signal(signal.SIGTERM)
        p.communicate(timeout=60)
        self.assertEqual(p.returncode, -signal.SIGTERM)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["scratch"])
        # The name an older version left after a SIGTERM: not in the way.
        with open(out + ".partial", "w") as f:
            f.write("left over")
        cap = run("capture", f"--output={out}", *self.node_flags)
        self.assertEqual(cap.returncode, 0, cap.stderr)
        self.assertEqual(sorted(os.listdir(self.tmp)), ["b.tar.gz", "b.tar.gz.partial", "scratch"])


class BundleBounds(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="rdmahd-capture-e2e-")
        self.scratch = os.path.join(self.tmp, "scratch")
        os.mkdir(self.scratch)

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_many_one_byte_members_are_refused_on_what_they_cost(self):
        """Issue 41 item 3: 199,999 one-byte members took 781 MiB of TMPDIR under a 256 MiB bound that
        counted their bytes. 150,000 of them (a 2 MB bundle) are refused before anything is written."""
        bundle = os.path.join(self.tmp, "tiny.tar.gz")
        with tarfile.open(bundle, "w:gz", compresslevel=1) as tar:
            for i in range(150000):
                info = tarfile.TarInfo(f"sys/f{i}")
                info.size = 1
                tar.addfile(info, io.BytesIO(b"1"))
        started = time.monotonic()
        r = run("check", f"--capture={bundle}", env={"TMPDIR": self.scratch})
        self.assertEqual(r.returncode, 2, r.stdout)
        self.assertIn("more than 100001 members (files, folders and links)", r.stderr)
        self.assertTrue(r.stdout.startswith("RDMA health unknown: "), r.stdout)
        self.assertEqual(os.listdir(self.scratch), [])
        self.assertLess(time.monotonic() - started, 60)

    def test_incomplete_bundle_is_not_judged_healthy(self):
        """Issue 41 item 4: a capture that stopped at its entry cap (its manifest says so, its own
        check said exit 2) was judged `RDMA healthy ... exit 0`."""
        node = os.path.join(self.tmp, "node")
        fixture = os.path.join(FIXTURES, "host", "numa-misplaced")
        shutil.copytree(fixture, node, symlinks=True)
        flags = [f"--path.sysfs={node}/sys", f"--path.procfs={node}/proc"]  # healthy without its config
        bundle = os.path.join(self.tmp, "b.tar.gz")
        self.assertEqual(run("capture", f"--output={bundle}", *flags).returncode, 0)
        whole = run("check", "--output=summary", f"--capture={bundle}", env={"TMPDIR": self.scratch})
        self.assertEqual(whole.returncode, 0, whole.stdout)  # a complete bundle of a healthy node
        self.assertTrue(whole.stdout.startswith("RDMA healthy"), whole.stdout)
        # The same bundle as a capture cut at its cap writes it.
        cut = os.path.join(self.tmp, "cut.tar.gz")
        with tarfile.open(bundle) as src, tarfile.open(cut, "w:gz") as dst:
            for m in src.getmembers():
                data = src.extractfile(m).read() if m.isfile() else None
                if m.name == "manifest.json":
                    manifest = json.loads(data)
                    self.assertIs(manifest["complete"], True)
                    reason = "over the cap of 100000 entries (files, folders and links)"
                    manifest.update(complete=False, cut_by=["entries"], skipped_more=347806,
                                    node_verdict_exit_code=2)
                    manifest["skipped_by_reason"][reason] = 348006
                    data = json.dumps(manifest).encode()
                    m.size = len(data)
                dst.addfile(m, io.BytesIO(data) if data is not None else None)
        for output in ("summary", "table", "json"):
            r = run("check", f"--output={output}", f"--capture={cut}", env={"TMPDIR": self.scratch})
            self.assertEqual(r.returncode, 2, r.stdout)
            self.assertIn("the bundle is incomplete: the capture stopped at its cap of 100000 entries and left "
                          "out 348006 paths (manifest.json names them), not judged here", r.stdout)
            self.assertIn("the node's own check said exit 2", r.stdout)
        self.assertEqual(os.listdir(self.scratch), [])


if __name__ == "__main__":
    unittest.main()
