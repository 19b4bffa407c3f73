#!/usr/bin/env bash
# probe_vs_perftest.sh: a guest scenario (single topology) comparing the daemon's verbs probe with
# perftest on the same Soft-RoCE device, alternately, RUNS times each (default 5):
#   latency:   ib_send_lat -n ITERS (2 B) t_typical and t_min  vs  `rdma-healthd probe`'s
#   bandwidth: ib_write_bw -D 1 (64 KiB) BW average  vs  `rdma-healthd probe --bandwidth --duration 1`
# and prints the medians of the per-run figures and their ratios (a run where one side printed
# nothing is left out of that side's median, and said so). No pass/fail: TCG is noisy
# (ib_send_lat's t_typical moves 11.8-18.4 us between runs, t_min much less); the figures go to
# the closing notes.
#   tests/vm/vm-run.sh --daemon=build/rdma-healthd --timeout=600 bench/probe_vs_perftest.sh [RUNS]
# The daemon's responder answers the probes (peers.responder on port 18600, allow 192.0.2.0/24).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
runs="${1:-5}" iters=1000 dir="$RDMAHD_VM_OUT" addr="$RDMAHD_VM_ADDR"
printf 'peers:\n  responder:\n    enabled: true\n    port: 18600\n    allow: [192.0.2.0/24]\n' >"$dir/bench.yaml"
start_daemon --config.file="$dir/bench.yaml"
wait_until 15 "responder listening" grep -q 'probe responder listening' "$dir/daemon.log"

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

perftest_bw() {
  timeout 60 ib_write_bw -d rxe0 -x 1 -D 1 -s 65536 -p 18516 >"$dir/bw-server.log" 2>&1 &
  local server=$! out=""
  for _ in $(seq 1 50); do
    out="$(timeout 60 ib_write_bw -d rxe0 -x 1 -D 1 -s 65536 -p 18516 "$addr" 2>&1)" && break
    sleep 0.2
  done
  wait "$server"
  # row: #bytes #iterations BW peak[MB/sec] BW average[MB/sec] MsgRate
  awk '$1 == 65536 && NF >= 5 { print $4 }' <<<"$out" | tail -n1
}

: >"$dir/lat-perftest"; : >"$dir/lat-probe"; : >"$dir/min-perftest"; : >"$dir/min-probe"
: >"$dir/bw-perftest"; : >"$dir/bw-probe"
keep() { [[ -n "$1" ]] && echo "$1" >>"$2"; }
for run in $(seq 1 "$runs"); do
  p="$(rxe_self_traffic "$iters" min)"
  # Row: #bytes #iterations t_min t_max t_typical ...
  q="$(timeout 120 "$RDMAHD_BIN" probe "$addr" --iterations "$iters" | awk -v n="$iters" '$1 == 2 && $2 == n { print $5, $3 }')"
  b="$(perftest_bw)"
  c="$(timeout 60 "$RDMAHD_BIN" probe "$addr" --bandwidth --duration 1 | awk '$1 == 65536 { print $4 }')"
  echo "run $run: t_typical/t_min ib_send_lat ${p:-none} us, probe ${q:-none} us; BW ib_write_bw ${b:-none} MB/s, probe ${c:-none} MB/s"
  keep "${p% *}" "$dir/lat-perftest"; keep "${p#* }" "$dir/min-perftest"
  keep "${q% *}" "$dir/lat-probe"; keep "${q#* }" "$dir/min-probe"
  keep "$b" "$dir/bw-perftest"; keep "$c" "$dir/bw-probe"
done
for f in lat-perftest lat-probe min-perftest min-probe bw-perftest bw-probe; do
  n="$(wc -l <"$dir/$f")"
  ((n == runs)) || echo "$f: $((runs - n)) of $runs runs printed nothing (left out of the median)"
done
lp="$(median <"$dir/lat-perftest")" lq="$(median <"$dir/lat-probe")"
mp="$(median <"$dir/min-perftest")" mq="$(median <"$dir/min-probe")"
bp="$(median <"$dir/bw-perftest")" bq="$(median <"$dir/bw-probe")"
awk -v lp="$lp" -v lq="$lq" -v mp="$mp" -v mq="$mq" -v bp="$bp" -v bq="$bq" -v n="$runs" 'BEGIN {
  printf "medians of %d runs: t_typical ib_send_lat %.2f us, probe %.2f us: ratio %.3f (target <= 1.05)\n", n, lp, lq, lq / lp
  printf "medians of %d runs: t_min ib_send_lat %.2f us, probe %.2f us: ratio %.3f\n", n, mp, mq, mq / mp
  printf "medians of %d runs: BW ib_write_bw %.2f MB/s, probe %.2f MB/s: ratio %.3f (target >= 0.95)\n", n, bp, bq, bq / bp }'
stop_daemon
