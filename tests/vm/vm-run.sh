#!/usr/bin/env bash
# vm-run.sh: boots Soft-RoCE VM(s) with Debian's kernel under QEMU (TCG), runs a scenario script
# inside as root with rxe0 ACTIVE, brings the results back and exits with the scenario's status.
#
#   vm-run.sh [--topology=single|peer] [--init=job|systemd] [--daemon=PATH] [--timeout=SECONDS]
#             [--out=DIR] SCENARIO [ARGS...]
#
#   single  one VM (2 vCPUs): rxe0 on veth0 (192.0.2.1/24); a QP can reach its own GID.
#   peer    two VMs (1 vCPU each) joined by a QEMU socket netdev on the host's 127.0.0.1; each has
#           rxe0 on eth0 (192.0.2.1 and 192.0.2.2). The scenario runs on both (RDMAHD_VM_NODE=1|2)
#           and the run fails when either fails.
#   --init     job (default): the initramfs chroots into the root and runs the scenario; systemd:
#              it hands the root to systemd as PID 1, which runs the scenario as a service
#   --daemon   the rdma-healthd binary the scenario tests (RDMAHD_BIN in the guest)
#   --timeout  bound for one boot and run of the scenario (default 150 single, 240 peer); a guest
#              still running then is killed and reported
#   --out      copy each node's results (output.log, console.log, dmesg.log, out/) to DIR/nodeN
#
# The guest runs the host's own binaries (the host's / is shared read-only under a tmpfs overlay),
# so paths are the same inside and out. Results come back through a writable 9p share (a per-run
# temporary folder), with console markers as the fallback.
#
# A guest that never hands over to its job (no "RDMAHD-VM: ... running job" line on its console
# within RDMAHD_VM_BOOT_TIMEOUT seconds, default 60, while a boot takes 5-15 s) is stuck in the
# emulator, the kernel's boot or the initramfs's module loading and mounts under TCG; it has no
# result to give. Every VM of the run is then stopped and booted again, up to
# RDMAHD_VM_BOOT_ATTEMPTS times in all (default 3), each stuck boot reported with its console tail.
# Nothing is retried once a job has started: a scenario passes or fails once. An initramfs that
# fails (a module that will not load) powers off with its status, which is reported, not retried.
#
# Exit: the scenario's status; 77 = VM unavailable here (skip; a failure when
# RDMAHD_REQUIRE_VM=1); 1 = harness or guest failure (hung guest, no result).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

topology=single init=job daemon="" timeout="" out=""
while (($#)); do
  case "$1" in
    --topology=*) topology="${1#*=}" ;;
    --init=*) init="${1#*=}" ;;
    --daemon=*) daemon="${1#*=}" ;;
    --timeout=*) timeout="${1#*=}" ;;
    --out=*) out="${1#*=}" ;;
    --) shift; break ;;
    -*) echo "vm-run: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
(($# >= 1)) || { sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
scenario="$(realpath "$1")"
shift
[[ -r "$scenario" ]] || { echo "vm-run: no scenario $scenario" >&2; exit 2; }
case "$topology" in
  single) nodes=1 smp=2 mem=1024 timeout="${timeout:-150}" ;;
  peer) nodes=2 smp=1 mem=768 timeout="${timeout:-240}" ;;
  *) echo "vm-run: unknown topology $topology" >&2; exit 2 ;;
esac
case "$init" in
  job) init_append="" ;;
  systemd) init_append=" rdmahd.init=systemd systemd.unit=rdmahd-vm.target" ;;
  *) echo "vm-run: unknown init $init" >&2; exit 2 ;;
esac
if [[ -n "$daemon" ]]; then
  daemon="$(realpath "$daemon")"
  [[ -x "$daemon" ]] || { echo "vm-run: --daemon $daemon is not executable" >&2; exit 2; }
fi
name="$(basename "$scenario" .sh)"

log() { echo "vm-run[$name]: $*" >&2; }

started=$SECONDS
prep_status=0
prep="$("$here/vm-prepare.sh")" || prep_status=$?
((prep_status == 0)) || exit "$prep_status"   # 77 skip / 1 failure; reason already printed
eval "$prep"
prepared=$((SECONDS - started))

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/rdmahd-vm.XXXXXX")"
pids=()
cleanup() {
  local pid
  # TERM: each pid is a `timeout`, which passes it on to its QEMU (a KILL would orphan the QEMU).
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  if [[ "${RDMAHD_VM_KEEP:-0}" == 1 ]]; then log "kept $run_dir"; else rm -rf "$run_dir"; fi
}
trap cleanup EXIT

# The console carries the kernel's whole log (it costs no measurable boot time), so the tail of a
# stuck boot says how far the kernel got.
#
# The guest bounds the scenario itself (and still powers off and reports) well before the host's
# kill: boot takes ~5-20 s under TCG, power-off a second.
scenario_timeout=$((timeout - 35))
((scenario_timeout >= 10)) || { echo "vm-run: --timeout=$timeout is too short" >&2; exit 2; }

write_job() {
  local node="$1" dir="$run_dir/node$1"
  mkdir -p "$dir"
  if ((${#scenario_args[@]})); then printf '%s\n' "${scenario_args[@]}" >"$dir/args"; else : >"$dir/args"; fi
  {
    echo "# written by vm-run.sh"
    printf 'export RDMAHD_VM_TOPOLOGY=%q RDMAHD_VM_NODE=%q RDMAHD_VM_NODES=%q\n' "$topology" "$node" "$nodes"
    printf 'export RDMAHD_VM_SCENARIO=%q RDMAHD_VM_ARGS_FILE=/vmshare/args\n' "$scenario"
    printf 'export RDMAHD_VM_SCENARIO_TIMEOUT=%q RDMAHD_BIN=%q\n' "$scenario_timeout" "$daemon"
    printf 'export RDMAHD_REQUIRE_VM=%q\n' "${RDMAHD_REQUIRE_VM:-0}"
    printf 'exec /bin/bash %q\n' "$here/guest-runner.sh"
  } >"$dir/job.sh"
}
scenario_args=("$@")

# boot NODE [QEMU ARGS...]: starts one VM in the background, bounded by the run's timeout.
boot() {
  local node="$1" dir="$run_dir/node$1"
  shift
  write_job "$node"
  # RDMAHD_VM_FREEZE_BOOTS=N (tests of this harness): the first N boot attempts start with their
  # vCPUs stopped (-S), a guest that never prints a line, as a hung early boot looks.
  local freeze=()
  ((attempt > ${RDMAHD_VM_FREEZE_BOOTS:-0})) || freeze=(-S)
  timeout --kill-after=5 "$timeout" qemu-system-x86_64 "${freeze[@]}" \
    -name "rdmahd-vm-$name-node$node" \
    -accel tcg,thread=multi -cpu "${RDMAHD_VM_CPU:-max}" -smp "$smp" -m "$mem" \
    -nodefaults -no-user-config -display none -monitor none -no-reboot \
    -serial "file:$dir/console.log" \
    -kernel "$RDMAHD_VM_KERNEL" -initrd "$RDMAHD_VM_INITRD" \
    -append "console=ttyS0 panic=-1 mitigations=off tsc=reliable$init_append" \
    -virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
    -virtfs "local,path=$dir,mount_tag=vmshare,security_model=none" \
    "$@" >"$dir/qemu.log" 2>&1 &
  pids+=($!)
}

# A free TCP port on 127.0.0.1 for the socket netdev.
free_port() {
  local port i
  for ((i = 0; i < 50; i++)); do
    port=$((20000 + RANDOM % 30000))
    [[ -z "$(ss -Htln "sport = :$port" 2>/dev/null)" ]] && { echo "$port"; return; }
  done
  echo "vm-run: no free port found" >&2
  return 1
}

# start_nodes: boots the topology's VMs (the second peer VM once the first listens).
start_nodes() {
  pids=()
  if [[ "$topology" == single ]]; then
    boot 1 -nic none
  else
    local port i
    port="$(free_port)"
    boot 1 -netdev "socket,id=n0,listen=127.0.0.1:$port" \
      -device virtio-net-pci,netdev=n0,mac=52:54:00:5e:00:01
    # The second VM connects: wait (bounded) until the first listens.
    for ((i = 0; i < 100; i++)); do
      [[ -n "$(ss -Htln "sport = :$port" 2>/dev/null)" ]] && break
      kill -0 "${pids[0]}" 2>/dev/null || break
      sleep 0.1
    done
    boot 2 -netdev "socket,id=n0,connect=127.0.0.1:$port" \
      -device virtio-net-pci,netdev=n0,mac=52:54:00:5e:00:02
  fi
}

# await_job: waits until every VM's console shows its init handed over to the job (the grep is not
# anchored to the line's start, as a kernel message may interleave with it). Prints the nodes not
# there after $boot_timeout s and returns 1; returns 0 at once when a QEMU has exited (an init that
# failed powers off), whose result the caller reports.
await_job() {
  local deadline=$((SECONDS + boot_timeout)) n pid silent
  while :; do
    silent=()
    for ((n = 1; n <= nodes; n++)); do
      grep -qa 'RDMAHD-VM: .* running job' "$run_dir/node$n/console.log" 2>/dev/null || silent+=("$n")
    done
    ((${#silent[@]} == 0)) && return 0
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null || return 0; done
    if ((SECONDS >= deadline)); then
      echo "${silent[*]}"
      return 1
    fi
    sleep 0.5
  done
}

# systemd as PID 1 loads the host's whole unit tree over 9p before the job starts: 25-45 s here.
default_boot_timeout=60
[[ "$init" == systemd ]] && default_boot_timeout=150
boot_timeout="${RDMAHD_VM_BOOT_TIMEOUT:-$default_boot_timeout}" boot_attempts="${RDMAHD_VM_BOOT_ATTEMPTS:-3}" attempt=1
boot_started=$SECONDS
for ((attempt = 1; ; attempt++)); do
  start_nodes
  silent="$(await_job)" && break
  for n in $silent; do
    log "node$n: the guest did not reach its job within $boot_timeout s" \
        "(boot attempt $attempt of $boot_attempts; console tail below)"
    { tail -n 20 "$run_dir/node$n/console.log" 2>/dev/null; cat "$run_dir/node$n/qemu.log" 2>/dev/null; } |
      sed "s/^/[node$n boot $attempt] /" >&2
  done
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  wait "${pids[@]}" 2>/dev/null || true
  ((attempt < boot_attempts)) || { log "no boot reached its job in $boot_attempts attempts"; exit 1; }
  for ((n = 1; n <= nodes; n++)); do rm -rf "${run_dir:?}/node$n"; done
done
((attempt == 1)) || log "booted on attempt $attempt of $boot_attempts"

overall=0
for ((n = 1; n <= nodes; n++)); do
  dir="$run_dir/node$n"
  qemu_status=0
  wait "${pids[n - 1]}" || qemu_status=$?
  status=""
  if [[ -s "$dir/status" ]]; then
    status="$(<"$dir/status")"
  elif grep -qa 'RDMAHD-VM-EXIT=' "$dir/console.log" 2>/dev/null; then
    status="$(grep -a -o 'RDMAHD-VM-EXIT=[0-9]*' "$dir/console.log" | tail -n1 | cut -d= -f2)"
  fi
  [[ -f "$dir/output.log" ]] && sed "s/^/[node$n] /" "$dir/output.log" >&2
  if ((qemu_status == 124 || qemu_status == 137)); then
    log "node$n: guest hung: killed after $timeout s (console tail below)"
    status=1
  elif [[ -z "$status" ]]; then
    log "node$n: guest produced no result (qemu exit $qemu_status; console tail below)"
    status=1
  elif [[ "$status" == 77 ]]; then
    log "node$n: the scenario skipped inside the VM; VM scenarios must not pass by skipping"
    status=1
  fi
  if [[ "$status" != 0 ]]; then
    { echo "--- node$n console (tail) ---"; tail -n 40 "$dir/console.log" 2>/dev/null
      echo "--- node$n qemu ---"; cat "$dir/qemu.log" 2>/dev/null; } | sed "s/^/[node$n] /" >&2
  fi
  ((overall != 0)) || overall="$status"
  if [[ -n "$out" ]]; then
    mkdir -p "$out/node$n"
    cp -a "$dir/." "$out/node$n/"
  fi
done

log "$topology topology, kernel $RDMAHD_VM_KVER: status $overall; wall $((SECONDS - started)) s" \
    "(prepare $prepared s, VM $((SECONDS - boot_started)) s)"
exit "$overall"
