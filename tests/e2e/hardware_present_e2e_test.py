"""End-to-end: the daemon runs on a copy of a fixture tree; the test takes a device away between
scrapes (its class/infiniband entry and its folder under devices/), as a NIC that falls off the bus
leaves sysfs, and puts it back. hardware_present must go failed naming the device, its PCI address
and when it went, stay failed while it is gone, and say recovered once it is back. Also:
inventory.expected fails `check` at once when a device is missing."""

import json
import os
import re
import shutil
import tempfile
import time
import unittest

from fs_e2e_test import MLX5_ROCE, copy_tree, tree_args
from harness import Daemon, run


def node_copy(tmp, config_text):
    """A copy of the mlx5-roce tree and a config file, in `tmp`: (sysfs, config path)."""
    sysfs = copy_tree(MLX5_ROCE, tmp)
    config = os.path.join(tmp, "config.yaml")
    with open(config, "w") as f:
        f.write(config_text)
    return sysfs, config


def verdicts(daemon):
    status, _, body = daemon.get("/api/v1/checks")
    assert status == 200, body
    return {(v["check"], v["subject"]): v for v in json.loads(body)["verdicts"]}


def status_line(daemon, subject, status):
    _, _, body = daemon.get("/metrics")
    m = re.search(r'^rdma_check_status\{check="hardware_present",subject="%s",status="%s"\} (\d)$'
                  % (re.escape(subject), status), body, re.M)
    return m and m.group(1)


class HardwarePresentE2ETest(unittest.TestCase):
    def test_a_device_removed_between_scrapes_fails_then_recovers(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs, config = node_copy(tmp, "scrape: {cache_window: 0}\n")
            link = os.path.join(sysfs, "class", "infiniband", "mlx5_1")
            target = os.readlink(link)
            real = os.path.realpath(link)
            aside = os.path.join(tmp, "mlx5_1-aside")
            with Daemon(*tree_args(sysfs), f"--config.file={config}") as d:
                v = verdicts(d)
                self.assertEqual(v[("hardware_present", "mlx5_1")]["status"], "ok", v)
                self.assertIn("present (PCI 0000:af:00.0)", v[("hardware_present", "mlx5_1")]["reason"])

                os.unlink(link)
                shutil.move(real, aside)
                time.sleep(1.1)  # the time it went is printed to the second
                v = verdicts(d)
                gone = v[("hardware_present", "mlx5_1")]
                self.assertEqual(gone["status"], "failed", gone)
                self.assertRegex(gone["reason"], r"^mlx5_1 \(PCI 0000:af:00\.0\) is gone with .*port 1.*: missing since "
                                                 r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(last seen ")
                self.assertIn("lspci -s 0000:af:00.0", gone["fix"])
                self.assertEqual(v[("hardware_present", "mlx5_0")]["status"], "ok", "the other device is not affected")
                # Sticky: another collection later, still failed, same time.
                self.assertEqual(status_line(d, "mlx5_1", "failed"), "1")
                again = verdicts(d)[("hardware_present", "mlx5_1")]
                self.assertEqual(again["status"], "failed")
                self.assertEqual(again["reason"], gone["reason"])

                shutil.move(aside, real)
                os.symlink(target, link)
                back = verdicts(d)[("hardware_present", "mlx5_1")]
                self.assertEqual(back["status"], "ok", back)
                self.assertRegex(back["reason"], r"^recovered: mlx5_1 \(PCI 0000:af:00\.0\) back since .* UTC after "
                                                 r"[\d.]+ s away \(missing since ")
                self.assertEqual(status_line(d, "mlx5_1", "failed"), "0")

    def test_check_fails_at_once_when_the_inventory_is_short(self):
        with tempfile.TemporaryDirectory() as tmp:
            sysfs, config = node_copy(tmp, "inventory:\n  expected: {devices: 2, names: ['mlx5_.*']}\n")
            p = run("check", "--output=json", f"--config.file={config}", *tree_args(sysfs))
            node = {(v["check"], v["subject"]): v for v in json.loads(p.stdout)["verdicts"]}[("hardware_present", "node")]
            self.assertEqual(node["status"], "ok", node)
            os.unlink(os.path.join(sysfs, "class", "infiniband", "mlx5_1"))
            p = run("check", "--output=json", f"--config.file={config}", *tree_args(sysfs))
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            node = {(v["check"], v["subject"]): v for v in json.loads(p.stdout)["verdicts"]}[("hardware_present", "node")]
            self.assertEqual(node["status"], "failed")
            self.assertEqual(node["reason"], "expected at least 2 devices matching the names, found 1")


if __name__ == "__main__":
    unittest.main()
