#!/usr/bin/env bash
# hotplug (single VM): while rdma-healthd runs, `rdma link delete rxe0` makes rxe0's series vanish
# from the next scrape without errors or a crash, and `rdma link add` brings them back within one
# scrape. Then a few fast delete/add cycles under continuous scraping (devices vanishing mid-read).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
m="$RDMAHD_VM_OUT/metrics"
netdev="$RDMAHD_VM_NETDEV"
# A scrape after this is never served from a collection made before it (cache window <= 250 ms).
past_cache_window() { sleep 0.3; }

expect_rxe0_present() {
  scrape "$1"
  metric_one "$1" rdma_port_info device=rxe0 port=1 >/dev/null
  metric_one "$1" rdma_port_state_id device=rxe0 port=1 >/dev/null
  ok "rxe0 series present ($2)"
}

step "start rdma-healthd"
# A port whose device goes and comes back within link_flaps' drop window flapped, by design, and
# that verdict is logged at error level, as is hardware_present's while rxe0 is gone; this scenario
# is about the daemon following the devices, so those checks are off here (their own tests and
# hardware-present.sh cover device removal).
printf 'checks: {link_flaps: false, hardware_present: false}\n' >"$RDMAHD_VM_OUT/hotplug.yaml"
start_daemon --log.level=info --config.file="$RDMAHD_VM_OUT/hotplug.yaml"
expect_rxe0_present "$m-0.txt" "before delete"
expect_num "$(metric_one "$m-0.txt" rdma_devices_found)" "==" 1 "rdma_devices_found"

step "rdma link delete rxe0"
rdma link delete rxe0 || fail "rdma link delete rxe0"
wait_until 10 "rxe0 gone from sysfs" test ! -e /sys/class/infiniband/rxe0
past_cache_window
scrape "$m-1.txt"
daemon_alive || fail "rdma-healthd died after rxe0 was deleted"
[[ -z "$(series_of_device "$m-1.txt" rxe0)" ]] ||
  fail "rxe0 series still exported after delete: $(series_of_device "$m-1.txt" rxe0 | head -3)"
ok "no series for rxe0"
expect_num "$(metric_one "$m-1.txt" rdma_devices_found)" "==" 0 "rdma_devices_found"
expect_collectors_succeeded "$m-1.txt"

step "rdma link add rxe0"
rdma link add rxe0 type rxe netdev "$netdev" || fail "rdma link add rxe0"
past_cache_window
expect_rxe0_present "$m-2.txt" "first scrape after add"
wait_until 20 "rxe0 ACTIVE again" grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state
past_cache_window
scrape "$m-3.txt"
expect_num "$(metric_one "$m-3.txt" rdma_port_state_id device=rxe0 port=1)" "==" 4 "rdma_port_state_id{rxe0,1}"
expect_num "$(metric_one "$m-3.txt" rdma_devices_found)" "==" 1 "rdma_devices_found"
expect_collectors_succeeded "$m-3.txt"

step "3 fast delete/add cycles under continuous scraping"
scrapes="$RDMAHD_VM_OUT/scrape-codes.txt"
: >"$scrapes"
# Scrape as fast as curl goes (bounded: at most 60 s) while links come and go.
(
  end=$((SECONDS + 60))
  while [[ ! -e "$RDMAHD_VM_OUT/stop-scraping" ]] && ((SECONDS < end)); do
    curl -sS -m 20 -o /dev/null -w '%{http_code}\n' "http://$RDMAHD_LISTEN/metrics" >>"$scrapes" 2>&1
  done
) &
scraper=$!
for cycle in 1 2 3; do
  rdma link delete rxe0 || fail "cycle $cycle: rdma link delete rxe0"
  sleep 0.5
  rdma link add rxe0 type rxe netdev "$netdev" || fail "cycle $cycle: rdma link add rxe0"
  sleep 0.5
done
touch "$RDMAHD_VM_OUT/stop-scraping"
wait "$scraper"
daemon_alive || { tail -n 30 "$RDMAHD_VM_OUT/daemon.log"; fail "rdma-healthd died during delete/add cycles"; }
total="$(grep -c . "$scrapes")" good="$(grep -c '^200$' "$scrapes")"
((total >= 3)) || fail "only $total scrapes during the cycles"
expect_eq "$good" "$total" "scrapes answered 200 during the cycles (of $total)"

wait_until 20 "rxe0 ACTIVE after the cycles" grep -q ACTIVE /sys/class/infiniband/rxe0/ports/1/state
past_cache_window
expect_rxe0_present "$m-4.txt" "after the cycles"
expect_num "$(metric_one "$m-4.txt" rdma_port_state_id device=rxe0 port=1)" "==" 4 "rdma_port_state_id{rxe0,1}"
expect_collectors_succeeded "$m-4.txt"
expect_num "$(metric_one "$m-4.txt" rdma_check_status check=roce_v2_gid subject=rxe0/1 status=ok)" "==" 1 \
  "roce_v2_gid ok after the cycles"
# Errors of the daemon itself, not verdicts: a failed verdict is logged at error level by design,
# and 0.5 s after `rdma link add` the new rxe0's GIDs may not name their netdev yet (roce_v2_gid
# failed for that moment: true of that moment, and followed by ok).
if grep -v 'msg="check verdict changed"' "$RDMAHD_VM_OUT/daemon.log" |
    grep -Eiq '\[(error|critical)\]|level=(error|critical)|"level":"(error|critical)"'; then
  grep -v 'msg="check verdict changed"' "$RDMAHD_VM_OUT/daemon.log" | grep -Ei 'error|critical' | head -5
  fail "rdma-healthd logged errors while rxe0 came and went"
fi
ok "no error lines in the daemon log"
stop_daemon
