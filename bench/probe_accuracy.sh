#!/usr/bin/env bash
# probe_accuracy.sh: can the probe's latency be told apart from perftest's at 5%?
#
#   bench/probe_accuracy.sh [--unpinned] [PAIRS [ITERS]]   on the host (default 40 pairs of 200 iterations)
#
# Boots the single Soft-RoCE VM (tests/vm/vm-run.sh) and, inside it, on the same rxe0:
#   1. PAIRS back-to-back pairs of `ib_send_lat -n ITERS` and `rdma-healthd probe --iterations
#      ITERS`, the order alternating pair by pair; the ratio of each pair's t_typical (probe /
#      ib_send_lat);
#   2. a second daemon probing the first one's responder continuously (ITERS-iteration rounds,
#      every 2.5 pairs' time of step 1, at least 5 s) while ib_send_lat and the probe CLI run,
#      one each, between its rounds: each round's median (rdma_peer_latency_quantile_seconds
#      {quantile="0.5"}) against the mean of the
#      ib_send_lat runs just before and just after it, and against the CLI runs likewise.
# Every ping-pong's two ends are pinned to different vCPUs, the same for both tools: the servers
# (ib_send_lat's, the responder's sessions: peers.responder.cpus) on CPU 1, the clients
# (ib_send_lat's, the probe CLI, the second daemon's probe thread: peers.cpus) on CPU 0. Two
# busy-polling ends on one vCPU measure the scheduler (8,000 us for ib_send_lat, 85 us for the
# probe, which yields now and then); --unpinned leaves placement to the scheduler, as before.
# Each series of ratios is printed as its median with a 95% bootstrap interval (bench/ratio_ci.py),
# with the guest's and the host's CPU load while it ran. Short pairs taken back to back share the
# machine's state, so the pair ratio cancels most of what TCG's noise does to both; the interval
# says how well the median is known. No pass/fail: the figures go to the closing notes.
# The host must be quiet: with 2 cores busy compiling (load 12), TCG's ib_send_lat t_typical went
# from ~15 us to 4,000-16,000 us and no ratio meant anything; the host line says how busy it was.
set -euo pipefail

if [[ -z "${RDMAHD_VM_LIB:-}" ]]; then  # on the host: boot the VM with this script as its scenario
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(dirname "$here")"
  bin="${RDMAHD_BIN:-$root/build/rdma-healthd}"
  [[ -x "$bin" ]] || { echo "probe_accuracy: build rdma-healthd first ($bin)" >&2; exit 2; }
  read -r _ u n s i _ </proc/stat
  busy0=$((u + n + s)) all0=$((u + n + s + i))
  status=0
  "$root/tests/vm/vm-run.sh" --daemon="$bin" --timeout=1800 "$here/probe_accuracy.sh" "$@" || status=$?
  read -r _ u n s i _ </proc/stat
  awk -v b=$((u + n + s - busy0)) -v a=$((u + n + s + i - all0)) -v l="$(cut -d' ' -f1-3 /proc/loadavg)" \
    'BEGIN { printf "host: CPU busy %.0f%% of %d cores while the VM ran; load average now %s\n",
             a ? 100 * b / a : 0, '"$(nproc)"', l }'
  exit "$status"
fi

# In the guest.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
pinned=1
if [[ "${1:-}" == --unpinned ]]; then pinned=0; shift; fi
pairs="${1:-40}" iters="${2:-200}" dir="$RDMAHD_VM_OUT" addr="$RDMAHD_VM_ADDR"
server_cpus="" client_cpus=()
if ((pinned)); then
  export PERFTEST_SERVER_CPUS=1 PERFTEST_CLIENT_CPUS=0  # rxe_self_traffic's ib_send_lat pair
  server_cpus=$'\n    cpus: "1"' client_cpus=(taskset -c 0)
fi
ratio_ci() { python3 "$(dirname "$RDMAHD_BIN")/../bench/ratio_ci.py" "$@"; }
[[ -f "$(dirname "$RDMAHD_BIN")/../bench/ratio_ci.py" ]] || fail "bench/ratio_ci.py not beside the binary's build dir"

cpu_busy() { read -r _ u n s i _ </proc/stat; echo "$((u + n + s)) $((u + n + s + i))"; }
cpu_report() {  # cpu_report LABEL "BUSY0 ALL0"
  local b0="${2% *}" a0="${2#* }" now
  now="$(cpu_busy)"
  awk -v l="$1" -v b=$((${now% *} - b0)) -v a=$((${now#* } - a0)) -v la="$(cut -d' ' -f1-3 /proc/loadavg)" \
    'BEGIN { printf "guest: %s: CPU busy %.0f%% of 2 vCPUs, load average %s\n", l, a ? 100 * b / a : 0, la }'
}

# probe_cli: t_typical of one `rdma-healthd probe` run (row: #bytes #iterations t_min t_max t_typical ...)
probe_cli() {
  timeout 120 "${client_cpus[@]}" "$RDMAHD_BIN" probe "$addr" --iterations "$iters" |
    awk -v n="$iters" '$1 == 2 && $2 == n { print $5 }' | tail -n1
}

printf 'peers:\n  responder:\n    enabled: true\n    port: 18600\n    allow: [192.0.2.0/24]%s\n' "$server_cpus" >"$dir/a.yaml"
echo "placement: $( ((pinned)) && echo "servers on CPU 1, clients on CPU 0" || echo "unpinned")"
start_daemon --config.file="$dir/a.yaml"
wait_until 15 "responder listening" grep -q 'probe responder listening' "$dir/daemon.log"

step "1. $pairs pairs of ib_send_lat -n $iters and rdma-healthd probe --iterations $iters, order alternating"
: >"$dir/cli-ratios"
load0="$(cpu_busy)" t0=$SECONDS
for pair in $(seq 1 "$pairs"); do
  if ((pair % 2)); then p="$(rxe_self_traffic "$iters")"; q="$(probe_cli)"
  else q="$(probe_cli)"; p="$(rxe_self_traffic "$iters")"; fi
  [[ -n "$q" ]] || fail "pair $pair: the probe printed no result row"
  echo "pair $pair: ib_send_lat $p us, probe $q us"
  awk -v p="$p" -v q="$q" 'BEGIN { print q / p }' >>"$dir/cli-ratios"
done
cpu_report "pairs" "$load0"
# The second daemon's rounds must not overlap the runs between them: 2.5 times a pair's duration.
interval=$(( (SECONDS - t0) * 5 / (2 * pairs) + 1 ))
((interval >= 5)) || interval=5
ratio_ci "probe CLI t_typical / ib_send_lat t_typical" <"$dir/cli-ratios"

step "2. a second daemon's $iters-iteration rounds every ${interval} s, ib_send_lat and the CLI between them"
cat >"$dir/b.yaml" <<EOF
peers:
  targets: [$addr]
  interval: ${interval}s
  latency_iterations: $iters$( ((pinned)) && printf '\n  cpus: "0"')
  selection:
    self: 192.0.2.254   # so that this host's own address is a peer
EOF
b_listen=127.0.0.1:9874
"$RDMAHD_BIN" --web.listen-address=$b_listen --config.file="$dir/b.yaml" >>"$dir/daemon-b.log" 2>&1 &
b_pid=$!
trap 'kill -TERM "$b_pid" 2>/dev/null || true; stop_daemon >/dev/null 2>&1 || true' EXIT
rounds() {  # prints "successful-rounds median-seconds" from the second daemon's /metrics
  curl -fsS -m 5 "http://$b_listen/metrics" 2>/dev/null >"$dir/b.prom" || { echo "0 0"; return; }
  echo "$(metric "$dir/b.prom" rdma_peer_probes_total kind=latency result=success || echo 0)" \
       "$(metric "$dir/b.prom" rdma_peer_latency_quantile_seconds quantile=0.5 || echo 0)"
}
next_round() {  # waits (bounded) for a round after number $1; prints its number and median in us
  local deadline=$((SECONDS + 30)) r
  while ((SECONDS < deadline)); do
    r="$(rounds)"
    if ((${r% *} > $1)); then awk -v n="${r% *}" -v s="${r#* }" 'BEGIN { print n, s * 1e6 }'; return; fi
    sleep 0.05
  done
  cat "$dir/daemon-b.log"; fail "no probe round within 30 s after round $1"
}
overlap() {  # true when a round ended after number $1 while the runs were going (it overlapped them)
  local r; r="$(rounds)"; ((${r% *} > $1))
}
: >"$dir/round-perftest-ratios"; : >"$dir/round-cli-ratios"
load0="$(cpu_busy)"
read -r count _ <<<"$(next_round 0)"  # the first round warms up the daemon and rxe: not paired
round="" prev_p="" prev_q="" overlaps=0
for i in $(seq 1 $((pairs + 1))); do
  # A round just ended: ib_send_lat and the CLI run now (2-3 s under TCG), before the next round.
  if ((i % 2)); then p="$(rxe_self_traffic "$iters")"; q="$(probe_cli)"
  else q="$(probe_cli)"; p="$(rxe_self_traffic "$iters")"; fi
  [[ -n "$q" ]] || fail "round pair $i: the probe printed no result row"
  if overlap "$count"; then
    echo "runs $i took longer than the round interval: the round they overlapped is not paired"
    overlaps=$((overlaps + 1)); round=""
  elif [[ -n "$round" ]]; then
    # The last round ran between the previous runs and these: paired with the mean of both.
    echo "round $count: median $round us; between ib_send_lat $prev_p and $p us, probe CLI $prev_q and $q us"
    awk -v r="$round" -v a="$prev_p" -v b="$p" 'BEGIN { print r / ((a + b) / 2) }' >>"$dir/round-perftest-ratios"
    awk -v r="$round" -v a="$prev_q" -v b="$q" 'BEGIN { print r / ((a + b) / 2) }' >>"$dir/round-cli-ratios"
  fi
  prev_p="$p" prev_q="$q"
  ((i <= pairs)) || break
  read -r count round <<<"$(next_round "$count")"
done
((overlaps == 0)) || echo "$overlaps rounds overlapped the runs and were left out"
cpu_report "rounds" "$load0"
kill -TERM "$b_pid"; wait "$b_pid" || true
ratio_ci "daemon round median / ib_send_lat t_typical" <"$dir/round-perftest-ratios"
ratio_ci "daemon round median / probe CLI t_typical" <"$dir/round-cli-ratios"
stop_daemon
