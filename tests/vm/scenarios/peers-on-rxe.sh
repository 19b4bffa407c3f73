#!/usr/bin/env bash
# peers-on-rxe (single VM): the daemon's own peer probes, end to end on Soft-RoCE. A responder
# daemon (port 18601) answers; a prober daemon with peers.targets = this VM's address probes it
# every second (latency, and an RDMA WRITE stream), and its /metrics shows the latency quantiles,
# the histogram, the bandwidth and success counters, with peer_reachable ok. The responder killed,
# the prober's probes fail with a bounded reason and peer_reachable fails; the responder back, the
# probes succeed again. A scrape during a round answers as fast as one before any peer was
# configured: the prober starts with no targets (baseline scrapes), gets its target by a reload
# (SIGHUP), and for the second set of timed scrapes a reload makes its rounds back to back (2000
# ping-pongs each, due every 100 ms), so that a round runs nearly all the time (rxe0's packet
# counter, sampled meanwhile, shows it does) and the responder, killed next, most likely dies
# mid-round. Each end is pinned (peers.cpus, peers.responder.cpus) to a vCPU of its own, so the
# ping-pong's two busy-polling threads never share one.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
addr="$RDMAHD_VM_ADDR"
responder_listen=127.0.0.1:9901

printf 'peers:\n  responder:\n    enabled: true\n    port: 18601\n    allow: [%s/32]\n    cpus: "1"\n' "$addr" >"$dir/responder.yaml"
# write_prober_config TARGETS [INTERVAL ITERATIONS]: the prober's config.
write_prober_config() {
  cat >"$dir/prober.yaml" <<YAML
peers:
  targets: [$1]
  cpus: "0"
  port: 18601
  interval: ${2:-1s}
  latency_iterations: ${3:-100}
  bandwidth: true
  bandwidth_interval: 10s
  bandwidth_duration: 500ms
YAML
}

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

# Scrapes timed in each phase, 3 a second (every one collects afresh: scrape.cache_window is 200 ms).
scrapes=20 rate=3/s

step "responder daemon on :18601, prober daemon with no peer yet: $scrapes timed scrapes"
start_responder
write_prober_config ""
start_daemon --config.file="$dir/prober.yaml"
scrape "$dir/m0.prom"
expect_eq "$(metric "$dir/m0.prom" rdma_peer_probes_total || echo none)" none "rdma_peer_probes_total before any peer"
time_scrapes "$scrapes" "$rate"
base_median="$SCRAPE_MEDIAN" base_max="$SCRAPE_MAX"
ok "baseline: median ${base_median} s, slowest ${base_max} s of $scrapes scrapes"

step "reload with peers.targets = [$addr]: it is probed every second"
write_prober_config "$addr"
kill -HUP "$RDMAHD_DAEMON_PID"
deadline=$((SECONDS + 90))
while :; do
  scrape "$dir/m1.prom"
  ok_latency="$(counter "$dir/m1.prom" success)"
  bw="$(metric "$dir/m1.prom" rdma_peer_bandwidth_bytes_per_second peer="$addr" 2>/dev/null || true)"
  ((ok_latency >= 2)) && [[ -n "$bw" ]] && break
  ((SECONDS < deadline)) || { tail -20 "$RDMAHD_VM_OUT/daemon.log"; fail "no successful latency rounds and bandwidth within 90 s"; }
  sleep 1
done
expect_eq "$(metric_one "$dir/m1.prom" rdma_healthd_config_last_reload_successful)" 1 "reload successful"
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
expect_eq "$(thread_cpus "$RDMAHD_DAEMON_PID" probe-peers)" 0 "the prober's probe thread CPUs (peers.cpus)"
expect_eq "$(thread_cpus "$responder_pid" probe-responder)" 1 \
  "the responder's listener thread CPUs (peers.responder.cpus; its sessions start with them)"

step "rounds back to back (2000 ping-pongs, due every 100 ms): $scrapes timed scrapes during them"
write_prober_config "$addr" 100ms 2000
kill -HUP "$RDMAHD_DAEMON_PID"
sleep 2 # for the reload to take effect; the sampler below checks that rounds run
# Whether a round runs, looked at every 0.1 s during the timed scrapes: did rxe0 send a packet since
# the last look (the only RDMA traffic in this VM is the prober's). Bash builtins only (a read of
# the counter file, a read with a timeout on a FIFO no one writes as the pause), so the sampler
# costs the scrapes next to nothing.
pause="$(mktemp -u /tmp/pause.XXXXXX)"
mkfifo "$pause" # in the guest's tmpfs: a FIFO on the 9p share does not block
(
  exec 9<>"$pause"
  read -r prev </sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
  while :; do
    read -r -t 0.1 -u 9 _
    read -r now </sys/class/infiniband/rxe0/ports/1/hw_counters/sent_pkts
    echo $((now != prev))
    prev="$now"
  done
) >"$dir/busy.samples" &
sampler=$!
t0="$EPOCHREALTIME"
time_scrapes "$scrapes" "$rate"
t1="$EPOCHREALTIME"
kill "$sampler"
wait "$sampler" 2>/dev/null
looks="$(wc -l <"$dir/busy.samples")"
ok "$looks looks in $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }') s"
ok "during rounds: median ${SCRAPE_MEDIAN} s, slowest ${SCRAPE_MAX} s of $scrapes scrapes" \
  "(baseline: median ${base_median} s, slowest ${base_max} s)"
busy="$(awk '{ n++; s += $1 } END { printf "%.2f", n ? s / n : 0 }' "$dir/busy.samples")"
expect_num "$busy" ">=" 0.8 "share of the looks at rxe0 during the timed scrapes that saw packets sent"
# A scrape never waits for a round (a round here lasts 0.1 to several seconds); what it shares is
# the VM's 2 vCPUs with both ends of the ping-pong and rxe's kernel work. Measured on a loaded
# host (6 runs): baseline medians 18-35 ms, during rounds 0.7-1.8x that; the bound leaves room.
expect_num "$SCRAPE_MEDIAN" "<=" "$(awk -v b="$base_median" 'BEGIN {print 2 * b + 0.03}')" \
  "median scrape during rounds (s) <= 2 x baseline median + 30 ms"
expect_num "$SCRAPE_MAX" "<" 2 "slowest scrape during rounds (s, TCG)"

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
