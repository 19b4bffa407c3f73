#!/usr/bin/env python3
"""Generates a sysfs tree of N mlx5-like RDMA devices x 2 ports (Ethernet/RoCE) with full counters/
and hw_counters/, for benchmarks. Values are plausible, not captured: the point is the file count
and layout (names as ConnectX-6 exposes them on upstream kernels)."""

import argparse
import os

COUNTERS = [
    "VL15_dropped", "excessive_buffer_overrun_errors", "link_downed", "link_error_recovery",
    "local_link_integrity_errors", "multicast_rcv_packets", "multicast_xmit_packets",
    "port_rcv_constraint_errors", "port_rcv_data", "port_rcv_errors", "port_rcv_packets",
    "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_constraint_errors",
    "port_xmit_data", "port_xmit_discards", "port_xmit_packets", "port_xmit_wait", "symbol_error",
    "unicast_rcv_packets", "unicast_xmit_packets",
]
HW_COUNTERS = [
    "duplicate_request", "implied_nak_seq_err", "lifespan", "local_ack_timeout_err",
    "np_cnp_sent", "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence",
    "packet_seq_err", "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
    "req_remote_invalid_request", "resp_cqe_error", "resp_cqe_flush_error",
    "resp_local_length_error", "resp_remote_access_errors", "rnr_nak_retry_err",
    "roce_adp_retrans", "roce_adp_retrans_to", "roce_slow_restart", "roce_slow_restart_cnps",
    "roce_slow_restart_trans", "rp_cnp_handled", "rp_cnp_ignored", "rx_atomic_requests",
    "rx_dct_connect", "rx_icrc_encapsulated", "rx_read_requests", "rx_write_requests",
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
