#!/usr/bin/env bash
# probe-peer (peer topology, runs on both VMs): each VM runs the daemon with its probe responder
# (allow 192.0.2.0/24) and peers.targets = the other VM, latency every second and bandwidth, so the
# two daemons probe each other across the QEMU link. First `rdma-healthd probe` measures the peer
# by hand (latency both ways, node 1 also bandwidth); then each node reads its own daemon's
# /metrics: successful latency rounds to the peer with their quantiles and histogram, a bandwidth
# figure and peer_reachable ok. The responder's log shows the peer's latency and bandwidth
# sessions. Neither leaves before the other is done: a node that is done connects to the other's
# port 18699, and stops once the other has connected to its own (bounded). (Under TCG with one
# vCPU per VM a round trip takes milliseconds, not microseconds: no latency bound here.)
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
[[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "probe-peer needs the peer topology"
peer="$RDMAHD_VM_PEER_ADDR"
cat >"$dir/node.yaml" <<YAML
peers:
  targets: [$peer]
  port: 18600
  interval: 1s
  latency_iterations: 100
  bandwidth: true
  bandwidth_interval: 10s
  bandwidth_duration: 500ms
  responder:
    enabled: true
    port: 18600
    allow: [192.0.2.0/24]
YAML

# The peer's "done" arrives as a connection to this port, whenever it comes: listen from the start.
done_port=18699
busybox nc -l -p "$done_port" </dev/null >"$dir/peer-done" 2>&1 &
done_listener=$!

step "node $RDMAHD_VM_NODE ($RDMAHD_VM_ADDR): daemon with the responder, probing $peer"
start_daemon --config.file="$dir/node.yaml" --log.level=debug
wait_until 15 "responder listening" grep -q 'probe responder listening' "$dir/daemon.log"
wait_until 90 "ping $peer" busybox ping -c1 -W1 "$peer"

# The peer's daemon may still be starting: retry while nobody answers on its port (bounded).
step "latency to $peer"
deadline=$((SECONDS + 90))
until timeout 60 "$RDMAHD_BIN" probe "$peer" --iterations 100 >"$dir/lat.out" 2>"$dir/lat.err"; do
  cat "$dir/lat.err"
  grep -q 'failed (unreachable)\|failed (connect_timeout)' "$dir/lat.err" && ((SECONDS < deadline)) ||
    fail "probe to $peer failed"
  sleep 1
done
cat "$dir/lat.out"
read -r bytes iters tmin _ typical _ <<<"$(awk '$1 == 2 && $2 == 100' "$dir/lat.out")"
expect_eq "$bytes/$iters" "2/100" "#bytes/#iterations"
expect_num "$typical" ">=" "$tmin" "t_typical (us) across the link"
expect_num "$tmin" ">" 0 "t_min (us) across the link"

if ((RDMAHD_VM_NODE == 1)); then
  step "bandwidth to $peer"
  timeout 60 "$RDMAHD_BIN" probe "$peer" --bandwidth --duration 1 >"$dir/bw.out" 2>"$dir/bw.err" ||
    { cat "$dir/bw.err"; fail "bandwidth probe to $peer failed"; }
  cat "$dir/bw.out"
  read -r _ writes secs _ gbs _ <<<"$(awk '$1 == 65536' "$dir/bw.out")"
  expect_num "$writes" ">" 0 "writes completed"
  expect_num "$gbs" ">" 0 "BW average (Gb/s) across the link"
fi

step "this daemon's probes of $peer in its /metrics"
# counter FILE KIND RESULT: rdma_peer_probes_total of KIND probes to the peer, all reasons.
counter() {
  metric "$1" rdma_peer_probes_total peer="$peer" kind="$2" result="$3" | awk '{s += $1} END {print s + 0}'
}
# Rounds began as soon as the daemon started, maybe before the peer's responder listened: wait
# (bounded) for 3 successful rounds, a bandwidth stream and a last round that succeeded.
deadline=$((SECONDS + 120))
while :; do
  scrape "$dir/peers.prom"
  ok_latency="$(counter "$dir/peers.prom" latency success)"
  bw="$(metric "$dir/peers.prom" rdma_peer_bandwidth_bytes_per_second peer="$peer" || true)"
  reachable="$(metric "$dir/peers.prom" rdma_check_status check=peer_reachable subject="$peer" status=ok || true)"
  ((ok_latency >= 3)) && [[ -n "$bw" && "$reachable" == 1 ]] && break
  ((SECONDS < deadline)) || { tail -20 "$dir/daemon.log"
    fail "within 120 s: $ok_latency successful latency rounds (want 3), bandwidth '$bw', peer_reachable ok '$reachable'"; }
  sleep 1
done
ok "latency rounds to $peer: $ok_latency succeeded, $(counter "$dir/peers.prom" latency failure) failed" \
  "($(grep -E "^rdma_peer_probes_total\{.*result=\"failure\"" "$dir/peers.prom" | grep -o 'reason="[a-z_]*"' | sort -u | tr '\n' ' '))"
expect_num "$ok_latency" ">=" 3 "rdma_peer_probes_total{peer=$peer,kind=latency,result=success}"
median="$(metric_one "$dir/peers.prom" rdma_peer_latency_quantile_seconds peer="$peer" quantile=0.5)"
p99="$(metric_one "$dir/peers.prom" rdma_peer_latency_quantile_seconds peer="$peer" quantile=0.99)"
expect_num "$median" ">" 0 "latency median (s) to $peer"
expect_num "$p99" ">=" "$median" "latency p99 (s) >= median"
# Every successful round adds its 99 samples (latency_iterations - 1) to the histogram.
expect_eq "$(metric_one "$dir/peers.prom" rdma_peer_latency_seconds_count peer="$peer")" "$((ok_latency * 99))" \
  "rdma_peer_latency_seconds_count{peer=$peer} (99 per successful round)"
expect_num "$(counter "$dir/peers.prom" bandwidth success)" ">=" 1 "successful bandwidth streams to $peer"
expect_num "$bw" ">" 0 "rdma_peer_bandwidth_bytes_per_second{peer=$peer}"
expect_eq "$reachable" 1 "peer_reachable ok for $peer"

step "the peer's probe sessions in this responder's log"
wait_until 60 "a latency session from $peer" grep -q "probe responder: session.*$peer.*latency" "$dir/daemon.log"
wait_until 60 "a bandwidth session from $peer" grep -q "probe responder: session.*$peer.*bandwidth" "$dir/daemon.log"
ok "$peer's probe sessions logged: $(grep -c "probe responder: session.*$peer" "$dir/daemon.log")"

step "done: telling $peer, waiting for its word"
deadline=$((SECONDS + 60))
until timeout 5 bash -c "echo node$RDMAHD_VM_NODE done >/dev/tcp/$peer/$done_port" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "could not tell $peer we are done within 60 s"
  sleep 1
done
# The peer may still be measuring us (the boots are seconds apart): keep the responder up for it,
# unless its VM is gone (its scenario failed and it powered off: that failure is the report).
deadline=$((SECONDS + 240))
until [[ -s "$dir/peer-done" ]] && ! kill -0 "$done_listener" 2>/dev/null; do
  ((SECONDS < deadline)) || fail "$peer did not say it is done within 240 s"
  ((SECONDS % 10)) || busybox ping -c1 -W2 "$peer" >/dev/null || fail "$peer is gone without saying it is done"
  sleep 1
done
wait "$done_listener"
ok "$peer said: $(<"$dir/peer-done")"
stop_daemon
