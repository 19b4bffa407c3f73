#!/usr/bin/env bash
# peers-on-rxe (single VM): the daemon's own peer probes, end to end on Soft-RoCE. A responder
# daemon (port 18601) answers; a prober daemon with peers.targets = this VM's address probes it
# every second (latency, and an RDMA WRITE stream), and its /metrics shows the latency quantiles,
# the histogram, the bandwidth and success counters, with peer_reachable ok. The responder killed,
# the prober's probes fail with a bounded reason and peer_reachable fails; the responder back, the
# probes succeed again. Scrapes stay quick while rounds run.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
addr="$RDMAHD_VM_ADDR"
responder_listen=127.0.0.1:9901

printf 'peers:\n  responder:\n    enabled: true\n    port: 18601\n    allow: [%s/32]\n' "$addr" >"$dir/responder.yaml"
cat >"$dir/prober.yaml" <<YAML
peers:
  targets: [$addr]
  port: 18601
  interval: 1s
  latency_iterations: 100
  bandwidth: true
  bandwidth_interval: 10s
  bandwidth_duration: 500ms
YAML

responder_pid=
start_responder() {
  "$RDMAHD_BIN" --web.listen-address="$responder_listen" --config.file="$dir/responder.yaml" \
    >>"$dir/responder.log" 2>&1 &
  responder_pid=$!
  wait_until 30 "responder listening" grep -q 'probe responder listening' "$dir/responder.log"
}
trap '[[ -n "$responder_pid" ]] && kill -KILL "$responder_pid" 2>/dev/null; stop_daemon >/dev/null 2>&1 || true' EXIT

# counter FILE RESULT [REASON]: rdma_peer_probes_total of the latency probes to $addr.
counter() {
  local labels=(peer="$addr" kind=latency result="$2")
  [[ -n "${3:-}" ]] && labels+=(reason="$3")
  metric "$1" rdma_peer_probes_total "${labels[@]}" | awk '{s += $1} END {print s + 0}'
}

step "responder daemon on :18601, prober daemon probing $addr every second"
start_responder
start_daemon --config.file="$dir/prober.yaml"
deadline=$((SECONDS + 90))
while :; do
  scrape "$dir/m1.prom"
  ok_latency="$(counter "$dir/m1.prom" success)"
  bw="$(metric "$dir/m1.prom" rdma_peer_bandwidth_bytes_per_second peer="$addr" 2>/dev/null || true)"
  ((ok_latency >= 2)) && [[ -n "$bw" ]] && break
  ((SECONDS < deadline)) || { tail -20 "$RDMAHD_VM_OUT/daemon.log"; fail "no successful latency rounds and bandwidth within 90 s"; }
  sleep 1
done
expect_num "$ok_latency" ">=" 2 "successful latency probes"
expect_num "$bw" ">" 0 "rdma_peer_bandwidth_bytes_per_second{peer=$addr}"
median="$(metric_one "$dir/m1.prom" rdma_peer_latency_quantile_seconds peer="$addr" quantile=0.5)"
p99="$(metric_one "$dir/m1.prom" rdma_peer_latency_quantile_seconds peer="$addr" quantile=0.99)"
expect_num "$median" ">" 0 "latency median (s)"
expect_num "$p99" ">=" "$median" "latency p99 >= median"
count="$(metric_one "$dir/m1.prom" rdma_peer_latency_seconds_count peer="$addr")"
expect_num "$count" ">=" 99 "histogram count (99 samples per round)"
expect_eq "$(metric_one "$dir/m1.prom" rdma_check_status check=peer_reachable subject="$addr" status=ok)" 1 \
  "peer_reachable ok"

step "scrapes while rounds run"
slowest=0
for i in $(seq 10); do
  t="$(curl -sS -m 20 -o /dev/null -w '%{time_total}' "http://$RDMAHD_LISTEN/metrics")" || fail "scrape $i failed"
  slowest="$(awk -v a="$slowest" -v b="$t" 'BEGIN {print (b > a) ? b : a}')"
  sleep 0.3
done
expect_num "$slowest" "<" 2 "slowest of 10 scrapes during probe rounds (s, TCG)"

step "responder killed: probes fail with a bounded reason"
kill -KILL "$responder_pid"
wait "$responder_pid" 2>/dev/null
responder_pid=
failed_before="$(counter "$dir/m1.prom" failure)"
deadline=$((SECONDS + 60))
while :; do
  sleep 1
  scrape "$dir/m2.prom"
  failed="$(counter "$dir/m2.prom" failure)"
  ((failed > failed_before)) && break
  ((SECONDS < deadline)) || fail "no failed probe within 60 s of the responder's death"
done
reasons="$(grep -E "^rdma_peer_probes_total\{.*result=\"failure\"" "$dir/m2.prom" | grep -o 'reason="[a-z_]*"' | sort -u | tr '\n' ' ')"
ok "failed probes: $failed, reasons: $reasons"
[[ "$reasons" =~ reason=\"(rejected|unreachable|connect_timeout|route_resolution|timeout|wc_[a-z_]+)\" ]] ||
  fail "unexpected failure reasons: $reasons"
wait_until 30 "peer_reachable failed" bash -c "curl -sS http://$RDMAHD_LISTEN/metrics | grep -q 'rdma_check_status{check=\"peer_reachable\",subject=\"$addr\",status=\"failed\"} 1'"

step "responder back: probes succeed again"
start_responder
ok_before="$(counter "$dir/m2.prom" success)"
deadline=$((SECONDS + 60))
while :; do
  sleep 1
  scrape "$dir/m3.prom"
  ((  $(counter "$dir/m3.prom" success) > ok_before )) && break
  ((SECONDS < deadline)) || fail "no successful probe within 60 s of the responder's return"
done
expect_eq "$(metric_one "$dir/m3.prom" rdma_check_status check=peer_reachable subject="$addr" status=ok)" 1 \
  "peer_reachable ok again"
stop_daemon
kill -TERM "$responder_pid" 2>/dev/null
