#!/usr/bin/env bash
# peer-smoke (peer topology, runs on both VMs): RC traffic between two Soft-RoCE devices in two VMs
# joined by a QEMU socket netdev. Node 2 serves ib_send_lat, node 1 is the client; each then checks
# its own rxe0 counters moved.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
iters=20 tcp_port=18515

[[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "peer-smoke needs the peer topology"
step "node $RDMAHD_VM_NODE ($RDMAHD_VM_ADDR), peer $RDMAHD_VM_PEER_ADDR"
# The peer may still be booting: wait (bounded) until it answers.
wait_until 60 "ping $RDMAHD_VM_PEER_ADDR" busybox ping -c1 -W1 "$RDMAHD_VM_PEER_ADDR"
ok "peer answers ping"

sent_before="$(hw_counter sent_pkts)" rcvd_before="$(hw_counter rcvd_pkts)"
log="$RDMAHD_VM_OUT/ib_send_lat.log"
if ((RDMAHD_VM_NODE == 2)); then
  step "ib_send_lat server"
  timeout 90 ib_send_lat -d rxe0 -i 1 -x 1 -n "$iters" -p "$tcp_port" >"$log" 2>&1 ||
    { cat "$log"; fail "ib_send_lat server failed"; }
else
  step "ib_send_lat client -> $RDMAHD_VM_PEER_ADDR"
  deadline=$((SECONDS + 60))
  until timeout 90 ib_send_lat -d rxe0 -i 1 -x 1 -n "$iters" -p "$tcp_port" "$RDMAHD_VM_PEER_ADDR" \
      >"$log" 2>&1; do
    grep -q "Couldn't connect" "$log" && ((SECONDS < deadline)) || { cat "$log"; fail "ib_send_lat client failed"; }
    sleep 0.5
  done
  typical="$(awk '$1 == 2 && $2 ~ /^[0-9]+$/ { print $5 }' "$log" | tail -n1)"
  [[ -n "$typical" ]] || { cat "$log"; fail "ib_send_lat printed no result row"; }
  ok "ib_send_lat between the VMs: t_typical $typical us"
fi
expect_num "$(hw_counter sent_pkts)" ">=" "$((sent_before + iters))" "rxe0 sent_pkts (was $sent_before)"
expect_num "$(hw_counter rcvd_pkts)" ">=" "$((rcvd_before + iters))" "rxe0 rcvd_pkts (was $rcvd_before)"
