#!/usr/bin/env bash
# host-memory (single VM): the hugepages and workloads collectors and the hugepages_free,
# workload_numa and memlock checks on the real kernel. Hugepages reserved on node 0 show in the
# per-node pool; rxe0 has no NUMA node (a virtual device), so hugepages_free is judged system-wide,
# and on the VM's single NUMA node workload_numa is ok; a workload without CAP_IPC_LOCK whose memlock limit was lowered
# with prlimit fails memlock, the same limit on a root process (CAP_IPC_LOCK) passes.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
pool=/sys/devices/system/node/node0/hugepages/hugepages-2048kB

step "reserve 2 MiB hugepages on node 0"
[[ -d "$pool" ]] || fail "no $pool (kernel without per-node hugepage pools)"
echo 32 >"$pool/nr_hugepages" || fail "cannot write $pool/nr_hugepages"
reserved="$(cat "$pool/nr_hugepages")"
expect_num "$reserved" ">=" 8 "2 MiB hugepages reserved on node 0"

step "two workloads with a 64 KiB memlock limit: one without capabilities, one as root"
cp /bin/sleep /tmp/rdmahd-nocap
cp /bin/sleep /tmp/rdmahd-root
setpriv --reuid=65534 --regid=65534 --clear-groups /tmp/rdmahd-nocap 300 &
nocap=$!
/tmp/rdmahd-root 300 &
root=$!
trap 'kill "$nocap" "$root" 2>/dev/null; stop_daemon >/dev/null 2>&1 || true' EXIT
wait_until 10 "workload processes started" test -e "/proc/$nocap/limits" -a -e "/proc/$root/limits"
prlimit --pid "$nocap" --memlock=65536:65536 || fail "prlimit on pid $nocap"
prlimit --pid "$root" --memlock=65536:65536 || fail "prlimit on pid $root"
grep -q '^Max locked memory *65536 *65536 *bytes' "/proc/$nocap/limits" || fail "prlimit did not take: $(grep locked "/proc/$nocap/limits")"
ok "pids $nocap (uid 65534) and $root (root) at 64 KiB"

cat >"$dir/host.yaml" <<YAML
host:
  hugepages: {page_size: 2MiB, min_free: 4}
  workloads:
    - {name: nocap, process: rdmahd-nocap}
    - {name: root, process: rdmahd-root}
YAML
sed 's/min_free: 4/min_free: 100000/' "$dir/host.yaml" >"$dir/host-short.yaml"

# verdict FILE CHECK SUBJECT: the status of CHECK for SUBJECT in `check --output=json` output.
verdict() {
  jq -r --arg check "$2" --arg subject "$3" '
    [.. | objects | select(has("check") and has("subject") and has("status"))
        | select(.check == $check and .subject == $subject) | .status]
    | if length == 0 then "<none>" else unique | join(",") end' "$1"
}
reason() {
  jq -r --arg check "$2" --arg subject "$3" '
    [.. | objects | select(.check? == $check and .subject? == $subject) | .reason] | first // ""' "$1"
}

step "rdma-healthd check on the live node"
timeout 60 "$RDMAHD_BIN" check --config.file="$dir/host.yaml" --output=json >"$dir/check.json" 2>"$dir/check.err"
status=$?
cat "$dir/check.err"
jq -e . "$dir/check.json" >/dev/null || fail "check output is not JSON: $(head -c 300 "$dir/check.json")"
expect_eq "$status" 1 "exit status of check (memlock fails)"
expect_eq "$(verdict "$dir/check.json" memlock nocap)" failed "memlock of the workload without CAP_IPC_LOCK"
[[ "$(reason "$dir/check.json" memlock nocap)" == *"pid $nocap"*"soft 64 KiB, hard 64 KiB"* ]] ||
  fail "memlock reason: $(reason "$dir/check.json" memlock nocap)"
expect_eq "$(verdict "$dir/check.json" memlock root)" ok "memlock of the root workload (CAP_IPC_LOCK)"
expect_eq "$(verdict "$dir/check.json" memlock rdma-healthd)" "<none>" \
  "memlock of the daemon (not judged: no peer probes or responder configured)"
expect_eq "$(verdict "$dir/check.json" hugepages_free rxe0)" ok "hugepages_free of rxe0"
[[ "$(reason "$dir/check.json" hugepages_free rxe0)" == *"judged system-wide"* ]] ||
  fail "hugepages_free reason does not say it was judged system-wide: $(reason "$dir/check.json" hugepages_free rxe0)"
expect_eq "$(verdict "$dir/check.json" workload_numa nocap)" ok "workload_numa on a single NUMA node"

timeout 60 "$RDMAHD_BIN" check --config.file="$dir/host-short.yaml" --output=json >"$dir/short.json" 2>/dev/null
expect_eq "$(verdict "$dir/short.json" hugepages_free rxe0)" failed "hugepages_free of rxe0 with min_free 100000"
jq -e '[.. | objects | select(.check? == "hugepages_free" and .subject? == "rxe0") | .fix]
       | first | test("^echo [0-9]+ > /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages$")' \
  "$dir/short.json" >/dev/null || fail "hugepages_free fix is not the system-wide echo command"
ok "the failed verdict's fix is the system-wide nr_hugepages command"

step "the daemon's metrics"
start_daemon --config.file="$dir/host.yaml"
scrape "$dir/metrics.prom"
expect_collectors_succeeded "$dir/metrics.prom"
expect_num "$(metric_one "$dir/metrics.prom" rdma_host_node_hugepages node=0 size_bytes=2097152 state=total)" == "$reserved" \
  "rdma_host_node_hugepages{node=0,total}"
expect_num "$(metric_one "$dir/metrics.prom" rdma_workload_memlock_limit_bytes workload=nocap)" == 65536 \
  "rdma_workload_memlock_limit_bytes{workload=nocap}"
expect_eq "$(metric_one "$dir/metrics.prom" rdma_workload_up workload=root)" 1 "rdma_workload_up{workload=root}"
metric_one "$dir/metrics.prom" rdma_healthd_memlock_limit_bytes >/dev/null
metric "$dir/metrics.prom" rdma_workload_memory_bytes workload=nocap node=0 >/dev/null ||
  fail "no rdma_workload_memory_bytes for the nocap workload (numa_maps not read)"
ok "hugepage pools, workload limits and memory per node exported"
stop_daemon
