#!/usr/bin/env python3
"""Generates a sysfs tree of N mlx5-like RDMA devices x 2 ports (Ethernet/RoCE) with full counters/
and hw_counters/, for benchmarks. Values are plausible, not captured: the point is the file count
and layout (names as ConnectX-6 exposes them on upstream kernels)."""

import argparse
import os
import sys

# The counter names of the project's mlx5 fixtures (one list for both), plus the hw_counters newer
# ConnectX firmware adds, so a port has the ~58 files a ConnectX-6 shows.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "sysfs"))
from make_fixtures import MLX5_HW_COUNTERS, PMA_COUNTERS  # noqa: E402

COUNTERS = PMA_COUNTERS
HW_COUNTERS = MLX5_HW_COUNTERS + [
    "req_rnr_retries_exceeded", "req_transport_retries_exceeded", "resp_rnr_nak",
    "rx_delay_drop", "tx_delay_drop", "cq_overflow", "out_of_sequence_err",
]


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="output folder; the tree goes to ROOT/sys")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--ports", type=int, default=2)
    a = ap.parse_args()
    files = 0
    for d in range(a.devices):
        dev = os.path.join(a.root, "sys", "class", "infiniband", f"mlx5_{d}")
        for name, value in [("fw_ver", "20.39.1002"), ("board_id", "MT_0000000224"), ("hca_type", "MT4123"),
                            ("node_guid", f"b859:9f03:00{d:02x}:1a2b"), ("sys_image_guid", f"b859:9f03:00{d:02x}:1a2b"),
                            ("node_type", "1: CA")]:
            write(os.path.join(dev, name), value + "\n")
            files += 1
        for p in range(1, a.ports + 1):
            port = os.path.join(dev, "ports", str(p))
            for name, value in [("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"),
                                ("rate", "100 Gb/sec (2X HDR)"), ("link_layer", "Ethernet"),
                                ("lid", "0x0"), ("sm_lid", "0x0"), ("lid_mask_count", "0"), ("sm_sl", "0"),
                                ("cap_mask", "0x00010000")]:
                write(os.path.join(port, name), value + "\n")
                files += 1
            for i, c in enumerate(COUNTERS):
                write(os.path.join(port, "counters", c), f"{(d + 1) * (p + 1) * (i + 7) * 1000003}\n")
                files += 1
            for i, c in enumerate(HW_COUNTERS):
                write(os.path.join(port, "hw_counters", c), f"{(d + 3) * (i + 1) * 17}\n")
                files += 1
            netdev = f"ens{d}f{p - 1}np{p - 1}"
            gids = [
                ("fe80:0000:0000:0000:ba59:9fff:fe00:1a2b", "IB/RoCE v1"),
                ("fe80:0000:0000:0000:ba59:9fff:fe00:1a2b", "RoCE v2"),
                (f"0000:0000:0000:0000:0000:ffff:0a00:{d:02x}{p:02x}", "IB/RoCE v1"),
                (f"0000:0000:0000:0000:0000:ffff:0a00:{d:02x}{p:02x}", "RoCE v2"),
            ]
            for i in range(8):  # the rest of a GID table is zero
                gid, typ = gids[i] if i < len(gids) else ("0000:0000:0000:0000:0000:0000:0000:0000", None)
                write(os.path.join(port, "gids", str(i)), gid + "\n")
                files += 1
                if typ:
                    write(os.path.join(port, "gid_attrs", "types", str(i)), typ + "\n")
                    write(os.path.join(port, "gid_attrs", "ndevs", str(i)), netdev + "\n")
                    files += 2
    print(f"{a.devices} devices x {a.ports} ports, {files} files under {a.root}/sys")


if __name__ == "__main__":
    main()
