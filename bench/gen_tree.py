#!/usr/bin/env python3
"""Generates a sysfs tree of N mlx5-like RDMA devices x 2 ports (Ethernet/RoCE) with full counters/
and hw_counters/, for benchmarks. Values are plausible, not captured: the point is the file count
and layout (names as ConnectX-6 exposes them on upstream kernels).

Each port's netdev gets its /sys/class/net entry and, unless --no-ecn, the MLNX_OFED ECN folders
(ecn/roce_np and ecn/roce_rp: enable/0..7 and the DCQCN parameter files, names as mlx5 OFED shows
them); ROOT/dcb/<netdev>/ gets `dcb -j pfc show` and `dcb -j app show` output, the --path.dcb input
(collectors/dcb_capture.h), so that the netdev and roce collectors run without asking this machine's
kernel about netdevs it does not have."""

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


# The ECN folders of a ConnectX netdev under MLNX_OFED (as in
# ../shared/fixtures/real/sysfs/procfs-fixtures/sys/class/net/eth0/ecn): parameter -> value.
ECN_NP = {"cnp_802p_prio": 6, "cnp_dscp": 48, "min_time_between_cnps": 4}
ECN_RP = {"clamp_tgt_rate": 1, "clamp_tgt_rate_after_time_inc": 1, "dce_tcp_g": 1019, "dce_tcp_rtt": 1,
          "initial_alpha_value": 1023, "rate_reduce_monitor_period": 4, "rate_to_set_on_first_cnp": 10,
          "rpg_ai_rate": 5, "rpg_byte_reset": 32767, "rpg_gd": 11, "rpg_hai_rate": 50, "rpg_max_rate": 0,
          "rpg_min_dec_fac": 50, "rpg_min_rate": 1, "rpg_threshold": 1, "rpg_time_reset": 300}
ROCE_PRIORITY = 3


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("root", help="output folder; the tree goes to ROOT/sys")
    ap.add_argument("--devices", type=int, default=16)
    ap.add_argument("--ports", type=int, default=2)
    ap.add_argument("--no-ecn", action="store_true", help="netdevs without the MLNX_OFED ecn/ folders")
    ap.add_argument("--gid-table", type=int, default=8,
                    help="slots in each port's GID table (gids/0..N-1; mlx5 has 255), four of them set")
    a = ap.parse_args()
    files = 0
    ecn_files = 0
    netdevs = []
    for d in range(a.devices):
        dev = os.path.join(a.root, "sys", "class", "infiniband", f"mlx5_{d}")
        for name, value in [("fw_ver", "20.39.1002"), ("board_id", "MT_0000000224"), ("hca_type", "MT4123"),
                            ("node_guid", f"b859:9f03:{d:04x}:1a2b"), ("sys_image_guid", f"b859:9f03:{d:04x}:1a2b"),
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
            netdevs.append(netdev)
            gids = [
                ("fe80:0000:0000:0000:ba59:9fff:fe00:1a2b", "IB/RoCE v1"),
                ("fe80:0000:0000:0000:ba59:9fff:fe00:1a2b", "RoCE v2"),
                (f"0000:0000:0000:0000:0000:ffff:0a{d >> 8:02x}:{d & 0xff:02x}{p:02x}", "IB/RoCE v1"),
                (f"0000:0000:0000:0000:0000:ffff:0a{d >> 8:02x}:{d & 0xff:02x}{p:02x}", "RoCE v2"),
            ]
            for i in range(a.gid_table):  # the rest of a GID table is zero
                gid, typ = gids[i] if i < len(gids) else ("0000:0000:0000:0000:0000:0000:0000:0000", None)
                write(os.path.join(port, "gids", str(i)), gid + "\n")
                files += 1
                if typ:
                    write(os.path.join(port, "gid_attrs", "types", str(i)), typ + "\n")
                    write(os.path.join(port, "gid_attrs", "ndevs", str(i)), netdev + "\n")
                    files += 2
    for netdev in netdevs:
        net = os.path.join(a.root, "sys", "class", "net", netdev)
        for name, value in [("mtu", "4200"), ("operstate", "up"), ("speed", "100000"), ("carrier_changes", "2"),
                            ("address", "b8:59:9f:00:1a:2b"), ("ifindex", "4"), ("dev_port", "0")]:
            write(os.path.join(net, name), value + "\n")
            files += 1
        if not a.no_ecn:
            for role, params in (("roce_np", ECN_NP), ("roce_rp", ECN_RP)):
                folder = os.path.join(net, "ecn", role)
                for prio in range(8):
                    write(os.path.join(folder, "enable", str(prio)), f"{int(prio == ROCE_PRIORITY)}\n")
                for name, value in params.items():
                    write(os.path.join(folder, name), f"{value}\n")
                ecn_files += 8 + len(params)
        capture = os.path.join(a.root, "dcb", netdev)
        prio_pfc = ",".join("true" if p == ROCE_PRIORITY else "false" for p in range(8))
        write(os.path.join(capture, "pfc.json"),
              f'{{"pfc_cap":8,"macsec_bypass":false,"delay":4096,"prio_pfc":[{prio_pfc}]}}\n')
        write(os.path.join(capture, "app.json"), '{"dscp_prio":[[26,3],[48,6]]}\n')
    files += ecn_files
    print(f"{a.devices} devices x {a.ports} ports, {len(netdevs)} netdevs ({ecn_files} ECN files), "
          f"{files} files under {a.root}/sys; dcb -j captures under {a.root}/dcb")


if __name__ == "__main__":
    main()
