#!/usr/bin/env bash
# guest-runner.sh: runs inside the VM (root of the host's / under a tmpfs overlay, real kernel with
# rdma_rxe). Builds the topology's network and rxe0, runs the scenario with a bound, and leaves the
# results in the share: status, output.log, dmesg.log, and whatever the scenario put in out/.
#
# Set by the job file vm-run.sh writes:
#   RDMAHD_VM_TOPOLOGY   single | peer
#   RDMAHD_VM_NODE       1 or 2 (peer); 1 (single)
#   RDMAHD_VM_SCENARIO   absolute path of the scenario script (a host path, visible here)
#   RDMAHD_VM_ARGS_FILE  file with the scenario's arguments, one per line (may be empty)
#   RDMAHD_VM_SCENARIO_TIMEOUT  seconds the scenario may take
#   RDMAHD_BIN           rdma-healthd binary (may be empty for scenarios that do not need it)
set -uo pipefail

share=/vmshare
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export RDMAHD_VM_OUT="$share/out"
export RDMAHD_VM_LIB="$here/guest-lib.sh"
mkdir -p "$RDMAHD_VM_OUT"

log() { echo "guest-runner[node$RDMAHD_VM_NODE]: $*"; }

finish() {
  local status="$1"
  dmesg >"$share/dmesg.log" 2>&1
  echo "$status" >"$share/status"
  sync
  exit "$status"
}

# Waits (bounded) for rxe0's port 1 to report ACTIVE.
wait_rxe_active() {
  local state_file=/sys/class/infiniband/rxe0/ports/1/state i
  for ((i = 0; i < 100; i++)); do
    [[ -r "$state_file" && "$(<"$state_file")" == *ACTIVE* ]] && return 0
    sleep 0.2
  done
  log "rxe0 port 1 not ACTIVE after 20 s: $(cat "$state_file" 2>&1)"
  return 1
}

setup_single() {
  # One device whose QPs reach their own GID: rxe loops it back. The addresses are from
  # TEST-NET-1 and exist only inside this VM; fixed MACs keep rxe0's node GUID and link-local GID
  # the same from run to run (the captured fixture only changes where the kernel's values do).
  ip link set lo up &&
    ip link add veth0 address 02:00:00:00:00:01 type veth peer name veth1 address 02:00:00:00:00:02 &&
    ip addr add 192.0.2.1/24 dev veth0 &&
    ip link set veth0 up && ip link set veth1 up &&
    rdma link add rxe0 type rxe netdev veth0 || return 1
  export RDMAHD_VM_NETDEV=veth0 RDMAHD_VM_ADDR=192.0.2.1 RDMAHD_VM_PEER_ADDR=
}

setup_peer() {
  # eth0 is the QEMU socket netdev joining the two VMs over the host's 127.0.0.1.
  local me="192.0.2.$RDMAHD_VM_NODE" peer="192.0.2.$((3 - RDMAHD_VM_NODE))"
  ip link set lo up &&
    ip addr add "$me/24" dev eth0 &&
    ip link set eth0 up &&
    rdma link add rxe0 type rxe netdev eth0 || return 1
  export RDMAHD_VM_NETDEV=eth0 RDMAHD_VM_ADDR="$me" RDMAHD_VM_PEER_ADDR="$peer"
}

main() {
  log "kernel $(uname -r), booted in $(cut -d' ' -f1 /proc/uptime) s, topology $RDMAHD_VM_TOPOLOGY"
  case "$RDMAHD_VM_TOPOLOGY" in
    single) setup_single ;;
    peer) setup_peer ;;
    *) log "unknown topology $RDMAHD_VM_TOPOLOGY"; false ;;
  esac || { log "topology setup failed"; finish 3; }
  wait_rxe_active || finish 3
  export RDMAHD_BIN="${RDMAHD_BIN:-}"

  local args=()
  [[ -s "${RDMAHD_VM_ARGS_FILE:-}" ]] && mapfile -t args <"$RDMAHD_VM_ARGS_FILE"
  log "running $(basename "$RDMAHD_VM_SCENARIO") ${args[*]} (bound ${RDMAHD_VM_SCENARIO_TIMEOUT} s)"
  local start status
  start="$(cut -d' ' -f1 /proc/uptime)"
  timeout --kill-after=5 "$RDMAHD_VM_SCENARIO_TIMEOUT" \
    bash "$RDMAHD_VM_SCENARIO" "${args[@]}" >"$share/output.log" 2>&1 </dev/null
  status=$?
  if ((status == 124 || status == 137)); then
    echo "FAIL: scenario did not finish within ${RDMAHD_VM_SCENARIO_TIMEOUT} s (killed)" >>"$share/output.log"
  fi
  log "scenario exited $status after $(awk -v s="$start" '{ printf "%.1f", $1 - s }' /proc/uptime) s"
  finish "$status"
}

main
