#!/usr/bin/env bash
# daemon-on-rxe (single VM): rdma-healthd on the real /sys of a kernel with a Soft-RoCE device.
# /metrics must show rxe0 ACTIVE on Ethernet with its netdev and a RoCE v2 GID, at 10 Gb/s, and its
# hw counters must move by at least the packets ib_send_lat sent between two scrapes.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
port=/sys/class/infiniband/rxe0/ports/1
m1="$RDMAHD_VM_OUT/metrics-1.txt" m2="$RDMAHD_VM_OUT/metrics-2.txt"

step "start rdma-healthd"
start_daemon --path.sysfs=/sys --path.procfs=/proc --log.level=info
scrape "$RDMAHD_VM_OUT/healthy.txt" -/healthy
ok "/-/healthy answers 200"

step "first scrape"
scrape "$m1"
expect_num "$(metric_one "$m1" rdma_devices_found)" "==" 1 "rdma_devices_found"
expect_num "$(metric_one "$m1" rdma_port_state_id device=rxe0 port=1)" "==" 4 \
  "rdma_port_state_id{rxe0,1} (4 = ACTIVE)"
expect_num "$(metric_one "$m1" rdma_port_physical_state_id device=rxe0 port=1)" "==" 5 \
  "rdma_port_physical_state_id{rxe0,1} (5 = LinkUp)"
expect_num "$(metric_one "$m1" rdma_port_info device=rxe0 port=1 link_layer=Ethernet \
  netdev="$RDMAHD_VM_NETDEV")" "==" 1 "rdma_port_info{rxe0,1,Ethernet,$RDMAHD_VM_NETDEV}"
expect_num "$(metric_one "$m1" rdma_port_roce_v2_gids device=rxe0 port=1)" ">=" 1 \
  "rdma_port_roce_v2_gids{rxe0,1}"
# rxe reports "10 Gb/sec (1X FDR10)".
expect_num "$(metric_one "$m1" rdma_port_rate_bytes_per_second device=rxe0 port=1)" "==" 1250000000 \
  "rdma_port_rate_bytes_per_second{rxe0,1}"
expect_collectors_succeeded "$m1"
sent1="$(metric_one "$m1" rdma_port_hw_counters_total device=rxe0 port=1 counter=sent_pkts)"
rcvd1="$(metric_one "$m1" rdma_port_hw_counters_total device=rxe0 port=1 counter=rcvd_pkts)"

step "traffic between scrapes: 200 ib_send_lat ping-pongs to rxe0's own GID"
typical="$(rxe_self_traffic 200)" || exit 1
ok "ib_send_lat t_typical $typical us"

step "second scrape"
scrape "$m2"
sysfs_sent="$(<"$port/hw_counters/sent_pkts")" sysfs_rcvd="$(<"$port/hw_counters/rcvd_pkts")"
sent2="$(metric_one "$m2" rdma_port_hw_counters_total device=rxe0 port=1 counter=sent_pkts)"
rcvd2="$(metric_one "$m2" rdma_port_hw_counters_total device=rxe0 port=1 counter=rcvd_pkts)"
# Each ping-pong is one send each way, both on rxe0.
expect_num "$sent2" ">=" "$(awk -v a="$sent1" 'BEGIN { print a + 400 }')" "sent_pkts after traffic (was $sent1)"
expect_num "$rcvd2" ">=" "$(awk -v a="$rcvd1" 'BEGIN { print a + 400 }')" "rcvd_pkts after traffic (was $rcvd1)"
# The device is idle again: the exported value is the kernel's.
expect_num "$sent2" "==" "$sysfs_sent" "sent_pkts equals sysfs"
expect_num "$rcvd2" "==" "$sysfs_rcvd" "rcvd_pkts equals sysfs"
expect_collectors_succeeded "$m2"

step "hw_counters over RDMA netlink: one request per port, no counter file held open"
# (lifespan, the kernel's cache time for these counters, is a setting netlink does not carry: it is
# still read from its file.)
held="$(find "/proc/$RDMAHD_DAEMON_PID/fd" -type l -lname '*/hw_counters/*' ! -lname '*/lifespan' 2>/dev/null | wc -l)"
expect_num "$held" "==" 0 "hw_counters counter files held by rdma-healthd (netlink answers instead)"
held_state="$(find "/proc/$RDMAHD_DAEMON_PID/fd" -type l -lname '*/ports/1/state' 2>/dev/null | wc -l)"
# Held once, by the devices collector: link_flaps judges from its facts through the history and
# reads no file of its own (no file is read twice in one collection).
expect_num "$held_state" "==" 1 "ports/1/state held once (the files path is live)"
# Every hw counter the files list is exported, with the value `rdma statistic` shows (idle device).
m_nl="$RDMAHD_VM_OUT/metrics-netlink.txt"
sleep 0.3  # past the scrape cache window
scrape "$m_nl"
n_files=0
for f in "$port"/hw_counters/*; do
  name="$(basename "$f")"
  n_files=$((n_files + 1))
  expect_num "$(metric_one "$m_nl" rdma_port_hw_counters_total device=rxe0 port=1 counter="$name")" "==" \
    "$(<"$f")" "hw counter $name equals its file"
done
expect_num "$(grep -c '^rdma_port_hw_counters_total{device="rxe0",port="1"' "$m_nl")" "==" "$n_files" \
  "one series per hw_counters file ($n_files)"
sent_stat="$(rdma statistic show link rxe0/1 | tr ' ' '\n' | grep -A1 -x sent_pkts | tail -1)"
expect_num "$(metric_one "$m_nl" rdma_port_hw_counters_total device=rxe0 port=1 counter=sent_pkts)" "==" \
  "$sent_stat" "sent_pkts equals rdma statistic show"
expect_collectors_succeeded "$m_nl"

step "verbs: what only libibverbs can tell (real ibv_query_device / ibv_query_port on rxe0)"
# rxe's active MTU is the netdev MTU less its headers, rounded down to an IB MTU: 1500 -> 1024.
expect_num "$(<"/sys/class/net/$RDMAHD_VM_NETDEV/mtu")" "==" 1500 "$RDMAHD_VM_NETDEV MTU before"
expect_num "$(metric_one "$m2" rdma_port_active_mtu_bytes device=rxe0 port=1)" "==" 1024 \
  "rdma_port_active_mtu_bytes{rxe0,1} at netdev MTU 1500"
expect_num "$(metric_one "$m2" rdma_port_max_mtu_bytes device=rxe0 port=1)" "==" 4096 "rdma_port_max_mtu_bytes{rxe0,1}"
expect_num "$(metric_one "$m2" rdma_port_verbs_state_id device=rxe0 port=1)" "==" 4 "rdma_port_verbs_state_id{rxe0,1}"
for family in rdma_device_max_qp rdma_device_max_cqe rdma_device_max_cq rdma_device_max_mr \
              rdma_device_max_pd rdma_device_max_qp_wr rdma_device_max_sge rdma_device_max_mr_size_bytes; do
  expect_num "$(metric_one "$m2" "$family" device=rxe0)" ">=" 1 "$family{rxe0}"
done
# Every family of docs/metrics.md's verbs section is exposed on a real device.
for family in rdma_device_max_qp rdma_device_max_qp_wr rdma_device_max_sge rdma_device_max_cq \
              rdma_device_max_cqe rdma_device_max_mr rdma_device_max_pd rdma_device_max_srq \
              rdma_device_max_srq_wr rdma_device_max_qp_rd_atom rdma_device_max_mr_size_bytes \
              rdma_port_active_mtu_bytes rdma_port_max_mtu_bytes rdma_port_verbs_state_id \
              rdma_port_gid_table_size rdma_port_max_message_size_bytes; do
  grep -q "^$family{" "$m2" || fail "$family missing from /metrics"
done
ok "all 16 verbs families exported"
ip link set dev "$RDMAHD_VM_NETDEV" mtu 4200 || fail "ip link set mtu 4200"
m3="$RDMAHD_VM_OUT/metrics-3.txt"
for _ in $(seq 1 25); do  # rxe follows the netdev MTU at once; allow for the scrape cache
  scrape "$m3"
  [[ "$(metric "$m3" rdma_port_active_mtu_bytes device=rxe0 port=1)" == 4096 ]] && break
  sleep 0.3
done
expect_num "$(metric_one "$m3" rdma_port_active_mtu_bytes device=rxe0 port=1)" "==" 4096 \
  "rdma_port_active_mtu_bytes{rxe0,1} at netdev MTU 4200"

step "rxe0 as exported"
series_of_device "$m2" rxe0 | tee "$RDMAHD_VM_OUT/rxe0-metrics.txt"
grep -E '^rdma_(devices_found|healthd_collector_success)' "$m2"
stop_daemon
