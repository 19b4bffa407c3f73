#!/usr/bin/env bash
# capture-peers-exposition.sh: runs inside the single-VM topology (via regenerate-peers-fixture.sh).
# A responder daemon answers on 18601; a prober daemon probes it (latency every second, a WRITE
# stream every 10 s, with latency and bandwidth policies so both checks judge) and probes
# 192.0.2.99, an address of the VM's own subnet where nobody answers, so failures with a reason
# show too. Once both kinds have succeeded a few times, the prober's /metrics is copied to
# $RDMAHD_VM_OUT/peers/metrics.prom, as the daemon wrote it.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
addr="$RDMAHD_VM_ADDR"
mkdir -p "$dir/peers"

printf 'peers:\n  responder:\n    enabled: true\n    port: 18601\n    allow: [%s/32]\n' "$addr" >"$dir/responder.yaml"
cat >"$dir/prober.yaml" <<YAML
peers:
  targets: [$addr, 192.0.2.99]
  port: 18601
  interval: 1s
  latency_iterations: 200
  max_latency_p99_us: 100000
  bandwidth: true
  bandwidth_interval: 10s
  bandwidth_duration: 500ms
  min_bandwidth_gbps: 0.01
YAML

"$RDMAHD_BIN" --web.listen-address=127.0.0.1:9901 --config.file="$dir/responder.yaml" >"$dir/responder.log" 2>&1 &
responder_pid=$!
wait_until 30 "responder listening" grep -q 'probe responder listening' "$dir/responder.log"
start_daemon --config.file="$dir/prober.yaml"
trap 'kill -TERM "$responder_pid" 2>/dev/null; stop_daemon >/dev/null 2>&1 || true' EXIT

successes() {
  awk -v k="$2" -v p="$addr" 'index($0, "rdma_peer_probes_total{") == 1 && index($0, "peer=\"" p "\"") &&
       index($0, "kind=\"" k "\"") && index($0, "result=\"success\"") { s += $NF } END { print s + 0 }' "$1"
}
deadline=$((SECONDS + 120))
while :; do
  scrape "$dir/peers/metrics.prom"
  lat="$(successes "$dir/peers/metrics.prom" latency)" bw="$(successes "$dir/peers/metrics.prom" bandwidth)"
  ((lat >= 5 && bw >= 1)) && grep -q 'peer="192.0.2.99".*result="failure"' "$dir/peers/metrics.prom" && break
  ((SECONDS < deadline)) || fail "not enough rounds within 120 s (latency $lat, bandwidth $bw)"
  sleep 1
done
ok "captured after $lat latency and $bw bandwidth probes to $addr"
uname -r >"$dir/peers/kernel-release"
