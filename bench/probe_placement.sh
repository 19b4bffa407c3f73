#!/usr/bin/env bash
# probe_placement.sh: what CPU placement does to a ping-pong's latency on Soft-RoCE.
#
#   bench/probe_placement.sh [RUNS [ITERS]]        on the host (default 12 runs of 200 iterations)
#
# Boots the single Soft-RoCE VM (2 vCPUs) and, on its rxe0, prints the t_typical (us) of RUNS runs of:
#   - ib_send_lat, server and client on different vCPUs, then both on vCPU 0;
#   - `rdma-healthd probe` against a daemon's responder: unpinned, the two on different vCPUs
#     (the daemon's threads on 1, the probe on 0), both on vCPU 0, and unpinned again.
# Two ends that busy-poll on one vCPU wait for the scheduler: ib_send_lat (which never yields)
# waits for the tick, the probe (which yields every 256 polls) for its next yield. That is the
# probe's slow mode; unpinned, the scheduler decides run by run whether the ends share a vCPU.
# No pass/fail: the figures go to docs/performance.md. Run it on a quiet host.
set -euo pipefail

if [[ -z "${RDMAHD_VM_LIB:-}" ]]; then  # on the host: boot the VM with this script as its scenario
  here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
  root="$(dirname "$here")"
  bin="${RDMAHD_BIN:-$root/build/rdma-healthd}"
  [[ -x "$bin" ]] || { echo "probe_placement: build rdma-healthd first ($bin)" >&2; exit 2; }
  exec "$root/tests/vm/vm-run.sh" --daemon="$bin" --timeout=1200 "$here/probe_placement.sh" "$@"
fi

# In the guest.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
runs="${1:-12}" iters="${2:-200}" dir="$RDMAHD_VM_OUT" addr="$RDMAHD_VM_ADDR"
printf 'peers:\n  responder:\n    enabled: true\n    port: 18600\n    allow: [192.0.2.0/24]\n' >"$dir/a.yaml"

probe_cli() {  # probe_cli [taskset -c CPUS]: one run's t_typical
  timeout 120 "$@" "$RDMAHD_BIN" probe "$addr" --iterations "$iters" |
    awk -v n="$iters" '$1 == 2 && $2 == n { print $5 }' | tail -n1
}
probe_series() {  # LABEL DAEMON_CPUS PROBE_CPUS ("any": unpinned)
  local out="" pin=()
  start_daemon --config.file="$dir/a.yaml"
  [[ "$2" == any ]] || taskset -a -p -c "$2" "$RDMAHD_DAEMON_PID" >/dev/null
  [[ "$3" == any ]] || pin=(taskset -c "$3")
  for _ in $(seq 1 "$runs"); do out="$out $(probe_cli "${pin[@]}")"; done
  echo "$1:$out"
  stop_daemon >/dev/null
}
perftest_series() {  # LABEL SERVER_CPU CLIENT_CPU
  local out=""
  for _ in $(seq 1 "$runs"); do
    out="$out $(PERFTEST_SERVER_CPUS="$2" PERFTEST_CLIENT_CPUS="$3" rxe_self_traffic "$iters")"
  done
  echo "$1:$out"
}

step "t_typical (us) of $runs runs of $iters iterations each"
perftest_series "ib_send_lat, server vCPU 0, client vCPU 1" 0 1
perftest_series "ib_send_lat, both on vCPU 0" 0 0
probe_series "probe, unpinned" any any
probe_series "probe, daemon on vCPU 1, probe on vCPU 0" 1 0
probe_series "probe, both on vCPU 0" 0 0
probe_series "probe, unpinned again" any any
