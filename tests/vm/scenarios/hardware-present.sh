#!/usr/bin/env bash
# hardware-present (single VM): `rdma link delete rxe0` while rdma-healthd runs makes the
# hardware_present check of rxe0 `failed`, naming rxe0 and when it went, and it stays failed on
# the next collection; `rdma link add` brings it back as `ok` saying "recovered". Read through
# /api/v1/checks (the reasons) and /metrics (rdma_check_status).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
netdev="$RDMAHD_VM_NETDEV"
# A scrape after this is never served from a collection made before it (cache window <= 250 ms).
past_cache_window() { sleep 0.3; }

field() {  # field FILE FIELD: hardware_present's FIELD (status, reason) for subject rxe0
  jq -r --arg f "$2" '[.verdicts[] | select(.check == "hardware_present" and .subject == "rxe0") | .[$f]]
                      | if length == 1 then .[0] else "<\(length) verdicts>" end' "$1"
}

step "start rdma-healthd"
# link_flaps judges a device that goes and comes back as a flap (its own scenario); not this one's.
printf 'checks: {link_flaps: false}\n' >"$dir/hardware-present.yaml"
start_daemon --log.level=info --config.file="$dir/hardware-present.yaml"
scrape "$dir/before.json" api/v1/checks
jq -e . "$dir/before.json" >/dev/null || fail "/api/v1/checks is not JSON: $(head -c 300 "$dir/before.json")"
expect_eq "$(field "$dir/before.json" status)" ok "hardware_present rxe0 before the delete"
[[ "$(field "$dir/before.json" reason)" == present* ]] ||
  fail "hardware_present rxe0 reason: $(field "$dir/before.json" reason)"

step "rdma link delete rxe0"
rdma link delete rxe0 || fail "rdma link delete rxe0"
wait_until 10 "rxe0 gone from sysfs" test ! -e /sys/class/infiniband/rxe0
past_cache_window
scrape "$dir/gone.json" api/v1/checks
daemon_alive || fail "rdma-healthd died after rxe0 was deleted"
expect_eq "$(field "$dir/gone.json" status)" failed "hardware_present rxe0 after the delete"
reason="$(field "$dir/gone.json" reason)"
[[ "$reason" =~ ^rxe0\ .*is\ gone.*missing\ since\ [0-9-]+\ [0-9:]+\ UTC ]] ||
  fail "hardware_present rxe0 reason does not name rxe0 and when it went: $reason"
ok "reason: $reason"
past_cache_window
scrape "$dir/gone.prom"
expect_num "$(metric_one "$dir/gone.prom" rdma_check_status check=hardware_present subject=rxe0 status=failed)" \
  "==" 1 "rdma_check_status{hardware_present,rxe0,failed} on the next collection (sticky)"

step "rdma link add rxe0"
rdma link add rxe0 type rxe netdev "$netdev" || fail "rdma link add rxe0"
wait_until 10 "rxe0 back in sysfs" test -e /sys/class/infiniband/rxe0
# Its netdev is known from the GID table, which rxe fills from the netdev's addresses: until then
# the netdev would read as still gone.
wait_until 20 "rxe0's GID table names $netdev" grep -qsx "$netdev" /sys/class/infiniband/rxe0/ports/1/gid_attrs/ndevs/*
past_cache_window
scrape "$dir/back.json" api/v1/checks
expect_eq "$(field "$dir/back.json" status)" ok "hardware_present rxe0 after the add"
reason="$(field "$dir/back.json" reason)"
[[ "$reason" == recovered:\ rxe0* ]] || fail "hardware_present rxe0 reason does not say recovered: $reason"
ok "reason: $reason"
past_cache_window
scrape "$dir/back.prom"
expect_num "$(metric_one "$dir/back.prom" rdma_check_status check=hardware_present subject=rxe0 status=failed)" \
  "==" 0 "rdma_check_status{hardware_present,rxe0,failed} after the add"
stop_daemon
