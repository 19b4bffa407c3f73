#!/usr/bin/env bash
# host-device (single VM): the plumbing and roce_tos collectors and their checks on the real kernel.
# rxe0's driver module (rdma_rxe) and the RDMA core modules are loaded and /dev/infiniband is
# there: kernel_modules and device_access are ok. rdma_cm's default ToS of rxe0 starts at the
# kernel default 0; set through configfs to 106 (DSCP 26, the usual RoCE marking), the daemon
# reports it with source "configfs", and the roce_tos check compares its DSCP with the policy.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"

verdict() {
  jq -r --arg check "$2" --arg subject "$3" '
    [.. | objects | select(has("check") and has("subject") and has("status"))
        | select(.check == $check and (.subject | tostring | contains($subject))) | .status]
    | if length == 0 then "<none>" else unique | join(",") end' "$1"
}
reason() {
  jq -r --arg check "$2" --arg subject "$3" '
    [.. | objects | select(.check? == $check and (.subject? | tostring | contains($subject))) | .reason]
    | first // ""' "$1"
}

step "modules and device nodes"
for m in ib_core ib_uverbs rdma_ucm rdma_rxe; do
  [[ -d "/sys/module/$m" ]] || fail "module $m not loaded in the guest"
done
ls -l /dev/infiniband/ || fail "no /dev/infiniband"
printf 'roce: {priority: 3, dscp: 26}\n' >"$dir/policy.yaml"
timeout 60 "$RDMAHD_BIN" check --config.file="$dir/policy.yaml" --output=json >"$dir/before.json" 2>"$dir/before.err"
jq -e . "$dir/before.json" >/dev/null || fail "check output is not JSON: $(head -c 300 "$dir/before.json")"
expect_eq "$(verdict "$dir/before.json" kernel_modules rdma_rxe)" ok "kernel_modules for rxe0's driver"
expect_eq "$(verdict "$dir/before.json" kernel_modules ib_uverbs)" ok "kernel_modules ib_uverbs"
uverbs="$(grep -lx rxe0 /sys/class/infiniband_verbs/uverbs*/ibdev | head -1)"
[[ -n "$uverbs" ]] || fail "no /sys/class/infiniband_verbs entry names rxe0"
uverbs="$(basename "$(dirname "$uverbs")")"
expect_eq "$(verdict "$dir/before.json" device_access "/dev/infiniband/$uverbs")" ok "device_access of rxe0's $uverbs"
expect_eq "$(verdict "$dir/before.json" device_access /dev/infiniband/rdma_cm)" ok "device_access of rdma_cm"

step "rdma_cm default ToS: kernel default, then 106 through configfs"
start_daemon --config.file="$dir/policy.yaml"
scrape "$dir/before.prom"
expect_collectors_succeeded "$dir/before.prom"
expect_num "$(metric_one "$dir/before.prom" rdma_roce_default_tos device=rxe0 port=1)" == 0 "ToS before configfs"
metric_one "$dir/before.prom" rdma_roce_default_tos device=rxe0 port=1 source=kernel_default >/dev/null
expect_eq "$(metric_one "$dir/before.prom" rdma_kernel_module_loaded module=rdma_rxe)" 1 "rdma_kernel_module_loaded{rdma_rxe}"

cfg=/sys/kernel/config
if ! grep -q " $cfg configfs " /proc/mounts; then
  mount -t configfs none "$cfg" || fail "cannot mount configfs on $cfg"
fi
[[ -d "$cfg/rdma_cm" ]] || fail "no $cfg/rdma_cm (rdma_cm not loaded?)"
mkdir "$cfg/rdma_cm/rxe0" || fail "mkdir $cfg/rdma_cm/rxe0"
echo 106 >"$cfg/rdma_cm/rxe0/ports/1/default_roce_tos" || fail "cannot set default_roce_tos"
expect_eq "$(cat "$cfg/rdma_cm/rxe0/ports/1/default_roce_tos")" 106 "default_roce_tos as the kernel reads it back"
sleep 0.3  # past the scrape cache window
scrape "$dir/after.prom"
expect_num "$(metric_one "$dir/after.prom" rdma_roce_default_tos device=rxe0 port=1 source=configfs)" == 106 \
  "rdma_roce_default_tos{rxe0/1, configfs}"
stop_daemon

timeout 60 "$RDMAHD_BIN" check --config.file="$dir/policy.yaml" --output=json >"$dir/after.json" 2>/dev/null
r="$(reason "$dir/after.json" roce_tos rxe0)"
[[ "$r" == *"106"* ]] || fail "roce_tos reason does not name ToS 106: $r"
ok "roce_tos judges the configfs ToS: $(verdict "$dir/after.json" roce_tos rxe0): $r"
printf '106 -> DSCP 26 matches roce.dscp; rxe0 has no DCB, so the priority step cannot be judged\n'
rmdir "$cfg/rdma_cm/rxe0" || true
