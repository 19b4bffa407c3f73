"""End-to-end tests of the "peers" probe in the running daemon: peers from the config and a targets
file reach /metrics (valid for promtool) and the peer checks, a SIGHUP reload and a file change
reconcile the peer set (removed peers' series go away, kept peers keep their counters), and a bad
targets file keeps the last good list; DNS discovery against a DNS server of the test's own on
127.0.0.1 (answers of hundreds of records over TCP, a CNAME loop, silence). Peers are loopback
addresses; whatever prober the build links, every probe to them ends (success or a failure with a
reason) within step_timeout, and the tests assert only that probes are counted, never a reason."""

import os
import re
import signal
import tempfile
import time
import unittest

from harness import Daemon, ScriptedDnsServer, promtool_check

PROBES = re.compile(r'^rdma_peer_probes_total\{peer="([^"]+)"(.*?),kind="latency",result="(\w+)",reason="(\w*)"\} (\d+)$',
                    re.M)


def probes_by_peer(body):
    """peer -> (extra labels, total latency probes counted)."""
    out = {}
    for peer, extra, _result, _reason, n in PROBES.findall(body):
        labels, total = out.get(peer, (extra, 0))
        out[peer] = (extra, total + int(n))
    return out


class PeersE2ETest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.cfg = os.path.join(self.tmp.name, "config.yaml")
        self.file = os.path.join(self.tmp.name, "peers.yaml")

    def write(self, path, text):
        # Atomic replace, as a config manager writes: a new inode each time.
        tmp = path + ".new"
        with open(tmp, "w") as f:
            f.write(text)
        os.replace(tmp, path)

    def write_config(self, targets):
        self.write(self.cfg, "peers:\n  targets: [%s]\n  file: peers.yaml\n  interval: 100ms\n"
                             "  step_timeout: 100ms\n  latency_iterations: 5\n" % ", ".join(targets))

    def wait_metrics(self, d, ok, timeout=10):
        deadline = time.monotonic() + timeout
        body = ""
        while time.monotonic() < deadline:
            status, _, body = d.get("/metrics")
            self.assertEqual(status, 200)
            if ok(body):
                return body
            time.sleep(0.1)
        self.fail("condition never held; last /metrics:\n" + "\n".join(
            l for l in body.splitlines() if "peer" in l)[:4000])

    def test_peers_reach_metrics_and_reload_and_file_changes_reconcile(self):
        self.write_config(["127.0.0.1", "127.0.0.2"])
        self.write(self.file, "- targets: [127.0.0.3]\n  labels: {rack: r1}\n")
        with Daemon(f"--config.file={self.cfg}", f"--path.sysfs={self.tmp.name}") as d:
            body = self.wait_metrics(d, lambda b: all(probes_by_peer(b).get(p, ("", 0))[1] >= 2
                                                      for p in ("127.0.0.1", "127.0.0.2", "127.0.0.3")))
            ok, out = promtool_check(body)
            self.assertTrue(ok, out)
            self.assertEqual(probes_by_peer(body)["127.0.0.3"][0], ',rack="r1"')
            self.assertIn('rdma_peer_latency_seconds_count{peer="127.0.0.1"}', body)
            # The probe's rounds are reported like a collector's runs (none of them throws here).
            self.assertIn('rdma_healthd_probe_success{probe="peers"} 1\n', body)
            self.assertRegex(body, r'rdma_healthd_probe_rounds_total\{probe="peers"\} [1-9]')
            self.assertIn('rdma_healthd_probe_failed_rounds_total{probe="peers"} 0\n', body)
            self.assertRegex(body, r'rdma_check_status\{check="peer_reachable",subject="127.0.0.2",status="\w+"\} 1')
            kept_before = probes_by_peer(body)["127.0.0.2"][1]

            # Reload: 127.0.0.1 removed, 127.0.0.2 kept with its counters, 127.0.0.4 added.
            self.write_config(["127.0.0.2", "127.0.0.4"])
            d.signal(signal.SIGHUP)
            self.assertIsNotNone(d.wait_for_log("reload", timeout=10), "\n".join(d.log_lines))
            body = self.wait_metrics(d, lambda b: probes_by_peer(b).get("127.0.0.4", ("", 0))[1] >= 1
                                     and '"127.0.0.1"' not in b)
            self.assertGreaterEqual(probes_by_peer(body)["127.0.0.2"][1], kept_before)
            self.assertNotIn('subject="127.0.0.1"', body)

            # The file changes: 127.0.0.3 leaves, 127.0.0.5 comes with its label.
            self.write(self.file, '[{"targets": ["127.0.0.5"], "labels": {"rack": "r2"}}]\n')
            body = self.wait_metrics(d, lambda b: "127.0.0.5" in b and "127.0.0.3" not in b)
            self.assertEqual(probes_by_peer(body)["127.0.0.5"][0], ',rack="r2"')

            # A bad file: the last good list stays, peer_reachable warns for the file.
            self.write(self.file, "- targets: [127.0.0.6\n")
            body = self.wait_metrics(d, lambda b: re.search(
                r'rdma_check_status\{check="peer_reachable",subject="file [^"]*peers.yaml",status="warning"\} 1', b))
            self.assertIn('peer="127.0.0.5"', body)
            self.assertNotIn("127.0.0.6", body)
            self.assertEqual(d.get("/-/healthy")[0], 200)

    def discovery_config(self, dns, names, extra=""):
        self.write(self.cfg, "peers:\n  interval: 100ms\n  step_timeout: 100ms\n  latency_iterations: 5\n"
                             "  discovery:\n    dns: [%s]\n    dns_server: \"%s\"\n    dns_interval: 1s\n%s"
                             % (", ".join(names), dns.address, extra))

    def test_a_discovery_only_config_runs_at_its_intervals(self):
        # Only discovery names, no targets and no file: lookups every dns_interval (1 s) and each
        # discovered peer every interval (100 ms), not once a minute.
        answer = lambda name, qtype: ([(name, "A", "127.0.0.2"), (name, "A", "127.0.0.3")]
                                      if name == "fleet.test" and qtype == "A" else [])
        with ScriptedDnsServer(answer) as dns:
            self.discovery_config(dns, ["fleet.test"])
            with Daemon(f"--config.file={self.cfg}", f"--path.sysfs={self.tmp.name}") as d:
                started = time.monotonic()
                body = self.wait_metrics(d, lambda b: all(probes_by_peer(b).get(p, ("", 0))[1] >= 10
                                                          for p in ("127.0.0.2", "127.0.0.3")) and
                                         dns.count("fleet.test") >= 3, timeout=15)
                self.assertLess(time.monotonic() - started, 15)
                self.assertEqual(probes_by_peer(body)["127.0.0.2"][0], ',service="fleet.test"')

    def test_a_silent_dns_server_never_holds_up_probes(self):
        # The server takes every query and answers none; a static target is due every 100 ms.
        with ScriptedDnsServer(lambda name, qtype: None) as dns:
            self.discovery_config(dns, ["silent.test"], "  targets: [127.0.0.1]\n")
            with Daemon(f"--config.file={self.cfg}", f"--path.sysfs={self.tmp.name}") as d:
                first = self.wait_metrics(d, lambda b: probes_by_peer(b).get("127.0.0.1", ("", 0))[1] >= 1)
                start, counted = time.monotonic(), probes_by_peer(first)["127.0.0.1"][1]
                # 50 probes due in 5 s; a loaded machine may run fewer, a starved thread runs none.
                body = self.wait_metrics(d, lambda b: probes_by_peer(b)["127.0.0.1"][1] >= counted + 20, timeout=10)
                self.assertLess(time.monotonic() - start, 10)
                self.assertGreaterEqual(dns.count("silent.test"), 1)
                # The lookups time out: a discovery warning says so.
                body = self.wait_metrics(d, lambda b: re.search(
                    r'rdma_check_status\{check="peer_reachable",subject="discovery",status="warning"\} 1', b))
                self.assertIsNotNone(d.wait_for_log(r"subject=discovery .*timeout or SERVFAIL", timeout=10, start=0),
                                     "\n".join(d.log_lines[-20:]))

    def test_large_answers_over_tcp_are_discovered_and_a_cname_loop_is_a_warning(self):
        # big.test: a headless Service of 600 pods, a 9,626-byte answer (over TCP); loop.test: a
        # CNAME loop, which used to give zero peers and no warning.
        pods = ["127.1.%d.%d" % (i // 250, 1 + i % 250) for i in range(600)]

        def answer(name, qtype):
            if name == "big.test":
                return [(name, "A", a) for a in pods] if qtype == "A" else []
            if name in ("loop-a.test", "loop-b.test"):
                return [("loop-a.test", "CNAME", "loop-b.test"), ("loop-b.test", "CNAME", "loop-a.test")]
            return []

        with ScriptedDnsServer(answer) as dns:
            # Probing 600 loopback peers is not the point: an hour's interval, and all of them kept.
            self.write(self.cfg, "peers:\n  interval: 1h\n  step_timeout: 100ms\n  latency_iterations: 5\n"
                                 "  selection: {max_peers: 4096}\n"
                                 "  discovery:\n    dns: [big.test, loop-a.test]\n    dns_server: \"%s\"\n"
                                 "    dns_interval: 1s\n" % dns.address)
            with Daemon(f"--config.file={self.cfg}", f"--path.sysfs={self.tmp.name}") as d:
                body = self.wait_metrics(d, lambda b: len(probes_by_peer(b)) >= 600, timeout=15)
                peers = probes_by_peer(body)
                self.assertEqual(sorted(peers), sorted(pods))
                self.assertEqual({extra for extra, _ in peers.values()}, {',service="big.test"'})
                self.assertTrue(any(q == ("big.test", "A", "tcp") for q in dns.queries), dns.queries[:10])
                body = self.wait_metrics(d, lambda b: re.search(
                    r'rdma_check_status\{check="peer_reachable",subject="discovery",status="warning"\} 1', b))
                line = d.wait_for_log(r"subject=discovery .*CNAME loop", timeout=10, start=0)
                self.assertIsNotNone(line, "\n".join(d.log_lines[-20:]))
                self.assertIn("loop-a.test is a CNAME loop: loop-a.test -> loop-b.test -> loop-a.test", line)
                self.assertNotIn("big.test", line)  # the name that resolved is not part of the warning
                self.assertEqual(d.get("/-/healthy")[0], 200)


if __name__ == "__main__":
    unittest.main()
