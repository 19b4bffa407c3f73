#!/usr/bin/env bash
# netem-loss (peer topology, runs on both VMs): RDMA traffic across a lossy link makes Soft-RoCE's
# retransmission and sequence-error hw_counters rise and the roce_transport_errors check fail
# naming them; once the loss is gone the verdict is held for host.error_rates.hold, then ok.
# Each VM drops 5% of what leaves its eth0 (netem), so both the requester (node 1: NAKs received,
# ack timeouts) and the responder (node 2: requests out of sequence, duplicates) count loss. Traffic
# to rxe0's own GID would not do: rxe loops it back inside the driver, past every qdisc.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
[[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "netem-loss needs the peer topology"
peer="$RDMAHD_VM_PEER_ADDR" nd="$RDMAHD_VM_NETDEV"
hw=/sys/class/infiniband/rxe0/ports/1/hw_counters

# A 30 s window and a 20 s hold (the defaults, 10 and 15 minutes, are too long for a VM run);
# every scrape collects.
cat >"$dir/node.yaml" <<YAML
scrape: {cache_window: 0}
host:
  error_rates: {window: 30s, hold: 20s}
YAML

# verdict FILE -> "status<TAB>reason" of roce_transport_errors rxe0/1 in an /api/v1/checks document.
verdict() {
  jq -r '.verdicts[] | select(.check == "roce_transport_errors" and .subject == "rxe0/1")
         | "\(.status)\t\(.reason)"' "$1"
}
# rxe's loss counters, "name value" per line.
loss_counters() {
  local c
  for c in rcvd_seq_err completer_retry_err out_of_seq_request duplicate_request sent_pkts rcvd_pkts; do
    echo "$c $(<"$hw/$c")"
  done
}
cleanup_netem() { tc qdisc del dev "$nd" root 2>/dev/null || true; }

step "node $RDMAHD_VM_NODE ($RDMAHD_VM_ADDR): daemon on rxe0 over $nd, peer $peer"
modprobe sch_netem || fail "modprobe sch_netem (is it in the initramfs module list, vm-prepare.sh MODULES?)"
start_daemon --config.file="$dir/node.yaml" --log.level=info
wait_until 90 "ping $peer" busybox ping -c1 -W1 "$peer"
scrape "$dir/before.json" api/v1/checks
IFS=$'\t' read -r status reason <<<"$(verdict "$dir/before.json")"
[[ "$status" == ok || "$status" == unknown ]] || fail "roce_transport_errors before any loss: $status ($reason)"
ok "before: $status ($reason)"
loss_counters >"$dir/counters-before.txt"

# One-packet writes (1024 bytes at rxe's 1024-byte MTU), at most 8 in flight: each loss costs a
# NAK or a timeout and few wasted packets, so the loss counters come to a few percent of the
# packets. (With 64 KiB writes rxe keeps up to 128 PSNs unacknowledged, and one NAK per 128 wasted
# packets would sit near the 1% limit.)
step "5% loss on $nd's egress while ib_write_bw runs between the nodes"
tc qdisc add dev "$nd" root netem loss 5% || fail "tc qdisc add dev $nd root netem loss 5%"
trap 'cleanup_netem; stop_daemon >/dev/null 2>&1 || true' EXIT
tc qdisc show dev "$nd"
peer_barrier 18710 180 "both lossy"
# Samples inside the window while the traffic runs: a scrape every 2 s in the background.
( for _ in $(seq 1 30); do curl -sS -m 10 -o /dev/null "http://$RDMAHD_LISTEN/metrics" || true; sleep 2; done ) &
scraper=$!
if ((RDMAHD_VM_NODE == 2)); then
  timeout 120 ib_write_bw -d rxe0 -x 1 -s 1024 -t 8 -D 15 -p 18720 >"$dir/bw-server.out" 2>&1 ||
    { cat "$dir/bw-server.out"; fail "ib_write_bw server failed"; }
  cat "$dir/bw-server.out"
else
  deadline=$((SECONDS + 60))
  until timeout 120 ib_write_bw -d rxe0 -x 1 -s 1024 -t 8 -D 15 -p 18720 "$peer" >"$dir/bw-client.out" 2>&1; do
    grep -q "Couldn't connect" "$dir/bw-client.out" && ((SECONDS < deadline)) ||
      { cat "$dir/bw-client.out"; fail "ib_write_bw client to $peer failed"; }
    sleep 0.5
  done
  cat "$dir/bw-client.out"
fi
loss_counters >"$dir/counters-lossy.txt"
paste "$dir/counters-before.txt" "$dir/counters-lossy.txt" | awk '{ print $1 ": " $2 " -> " $4 }'

step "the loss check fails naming rxe's counters"
rose="$(paste "$dir/counters-before.txt" "$dir/counters-lossy.txt" |
        awk '$1 != "sent_pkts" && $1 != "rcvd_pkts" && $4 > $2 { printf "%s ", $1 }')"
[[ -n "$rose" ]] || fail "no loss counter of rxe0 rose under 5% loss"
ok "rose: $rose"
scrape "$dir/lossy.json" api/v1/checks
IFS=$'\t' read -r status reason <<<"$(verdict "$dir/lossy.json")"
echo "roce_transport_errors rxe0/1: $status: $reason"
expect_eq "$status" failed "roce_transport_errors rxe0/1 under 5% loss"
[[ "$reason" == *"loss ("* ]] || fail "the reason names no loss rule: $reason"
named=0
for c in $rose; do [[ "$reason" == *"$c +"* ]] && named=$((named + 1)); done
expect_num "$named" ">=" 1 "loss counters that rose and are named in the reason ($rose)"
metric_file="$dir/lossy.prom"
scrape "$metric_file"
expect_num "$(metric_one "$metric_file" rdma_check_status check=roce_transport_errors subject=rxe0/1 status=failed)" \
  "==" 1 "rdma_check_status{roce_transport_errors,rxe0/1,failed}"

step "netem removed: held failed for the 20 s hold once the loss left the 30 s window, then ok"
cleanup_netem
kill "$scraper" 2>/dev/null; wait "$scraper" 2>/dev/null || true
held=0 deadline=$((SECONDS + 150))
while :; do
  scrape "$dir/after.json" api/v1/checks
  IFS=$'\t' read -r status reason <<<"$(verdict "$dir/after.json")"
  [[ "$status" == failed && "$reason" == *"held failed for 20 s"* ]] && held=1
  [[ "$status" == ok ]] && break
  ((SECONDS < deadline)) || fail "still $status 150 s after netem went: $reason"
  sleep 2
done
expect_eq "$held" 1 "a held verdict was seen between the loss and ok"
ok "back to ok: $reason"
# The other node may still be judging: keep this daemon (and its rxe0 traffic partner) until both are.
peer_barrier 18711 240 "both back to ok"
stop_daemon
