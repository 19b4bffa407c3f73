#!/usr/bin/env bash
# smoke (single VM): the guest really has a Soft-RoCE device: rxe0 ACTIVE on Ethernet with a RoCE v2
# GID for its address, visible to rdma-core, and RC traffic to its own GID moves its hw counters.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
port=/sys/class/infiniband/rxe0/ports/1

step "rxe0 in sysfs"
expect_eq "$(<"$port/state")" "4: ACTIVE" "rxe0/1 state"
expect_eq "$(<"$port/phys_state")" "5: LinkUp" "rxe0/1 phys_state"
expect_eq "$(<"$port/link_layer")" "Ethernet" "rxe0/1 link_layer"
expect_eq "$(<"$port/gid_attrs/types/1")" "RoCE v2" "rxe0/1 GID 1 type"
expect_eq "$(<"$port/gid_attrs/ndevs/1")" "$RDMAHD_VM_NETDEV" "rxe0/1 GID 1 netdev"
# ::ffff:192.0.2.1 as sysfs writes it.
expect_eq "$(<"$port/gids/1")" "0000:0000:0000:0000:0000:ffff:c000:0201" "rxe0/1 GID 1"

step "rdma-core and iproute2 see it"
link="$(rdma link show rxe0/1)"
echo "$link"
grep -q "state ACTIVE physical_state LINK_UP netdev $RDMAHD_VM_NETDEV" <<<"$link" ||
  fail "rdma link show rxe0/1 does not say ACTIVE on $RDMAHD_VM_NETDEV"
ibv_devinfo -d rxe0 | grep -q "state:.*PORT_ACTIVE" || fail "ibv_devinfo -d rxe0: port not PORT_ACTIVE"
ok "rdma link and ibv_devinfo agree"

step "RC traffic to its own GID"
sent_before="$(hw_counter sent_pkts)" rcvd_before="$(hw_counter rcvd_pkts)"
typical="$(rxe_self_traffic 200)" || exit 1
ok "ib_send_lat -x 1 to itself: t_typical $typical us"
expect_num "$(hw_counter sent_pkts)" ">=" "$((sent_before + 400))" "sent_pkts after 200 ping-pongs (was $sent_before)"
expect_num "$(hw_counter rcvd_pkts)" ">=" "$((rcvd_before + 400))" "rcvd_pkts after 200 ping-pongs (was $rcvd_before)"
