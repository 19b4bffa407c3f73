#!/usr/bin/env bash
# probe-peer (peer topology, runs on both VMs): each VM runs the daemon with its probe responder
# (allow 192.0.2.0/24). First `rdma-healthd probe` measures the other VM by hand across the QEMU
# link (latency both ways, node 1 also bandwidth). Once both have (a barrier), a reload gives each
# daemon peers.targets = the other VM, latency every second and bandwidth, so the two daemons probe
# each other, and each node reads its own /metrics: successful latency rounds to the peer with
# their quantiles and histogram, a bandwidth figure and peer_reachable ok; its responder's log
# shows the peer's latency and bandwidth sessions. A last barrier keeps each responder up until
# the other node is done. (Under TCG with one vCPU per VM a round trip takes milliseconds, not
# microseconds: no latency bound here.)
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
[[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "probe-peer needs the peer topology"
peer="$RDMAHD_VM_PEER_ADDR"

# write_config TARGETS: the node's config, its responder always on.
write_config() {
  cat >"$dir/node.yaml" <<YAML
peers:
  targets: [$1]
  port: 18600
  interval: 1s
  latency_iterations: 50
  bandwidth: true
  bandwidth_interval: 10s
  bandwidth_duration: 500ms
  bandwidth_queue_depth: 16
  responder:
    enabled: true
    port: 18600
    allow: [192.0.2.0/24]
YAML
}

step "node $RDMAHD_VM_NODE ($RDMAHD_VM_ADDR): daemon with the responder, peer $peer"
write_config ""
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

# Each node's probes by hand ran alone (the other side's at most), not next to the daemons' own.
peer_barrier 18698 180 "both measured by hand"

step "reload: peers.targets = [$peer], latency every second (50 ping-pongs), bandwidth"
log_at_reload="$(wc -l <"$dir/daemon.log")"
write_config "$peer"
kill -HUP "$RDMAHD_DAEMON_PID"

step "this daemon's probes of $peer in its /metrics"
# counter FILE KIND RESULT: rdma_peer_probes_total of KIND probes to the peer, all reasons.
counter() {
  metric "$1" rdma_peer_probes_total peer="$peer" kind="$2" result="$3" | awk '{s += $1} END {print s + 0}'
}
# The peer's first probe comes within a second of its reload, a bandwidth stream within 10 s; a
# round may fail while the peer's daemon reloads: wait (bounded) for 3 successful rounds, a
# bandwidth stream and a last round that succeeded.
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
expect_eq "$(metric_one "$dir/peers.prom" rdma_healthd_config_last_reload_successful)" 1 "reload successful"
expect_num "$ok_latency" ">=" 3 "rdma_peer_probes_total{peer=$peer,kind=latency,result=success}"
median="$(metric_one "$dir/peers.prom" rdma_peer_latency_quantile_seconds peer="$peer" quantile=0.5)"
p99="$(metric_one "$dir/peers.prom" rdma_peer_latency_quantile_seconds peer="$peer" quantile=0.99)"
expect_num "$median" ">" 0 "latency median (s) to $peer"
expect_num "$p99" ">=" "$median" "latency p99 (s) >= median"
# Every successful round adds its 49 samples (latency_iterations - 1) to the histogram.
expect_eq "$(metric_one "$dir/peers.prom" rdma_peer_latency_seconds_count peer="$peer")" "$((ok_latency * 49))" \
  "rdma_peer_latency_seconds_count{peer=$peer} (49 per successful round)"
expect_num "$(counter "$dir/peers.prom" bandwidth success)" ">=" 1 "successful bandwidth streams to $peer"
expect_num "$bw" ">" 0 "rdma_peer_bandwidth_bytes_per_second{peer=$peer}"
expect_eq "$reachable" 1 "peer_reachable ok for $peer"

step "the peer daemon's probe sessions in this responder's log (since the reload)"
since_reload() { tail -n "+$((log_at_reload + 1))" "$dir/daemon.log" | grep -c "probe responder: session.*$peer.*$1"; }
wait_until 60 "a latency session from $peer" since_reload latency
wait_until 60 "a bandwidth session from $peer" since_reload bandwidth
ok "$peer's sessions since the reload: $(since_reload latency) latency, $(since_reload bandwidth) bandwidth"

# The peer may still be measuring us: keep the responder up until it is done too.
peer_barrier 18699 240 "both read their /metrics"
stop_daemon
