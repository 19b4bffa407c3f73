#!/usr/bin/env bash
# kernel-log-on-rxe (single VM): mlx5-format lines written to the real /dev/kmsg reach nic_health for
# rxe0; the kernel's answers for FEC, module EEPROM and devlink on rxe0/veth0 give `unknown` with a
# reason, never ok; and `check --path.kmsg` on the saved log gives the live daemon's verdicts.
#
# How the test lines are told apart: the kernel gives every record written to /dev/kmsg from user
# space facility 1 (LOG_USER) unless its `<N>` prefix names another non-zero one, never 0; the
# lines below give a level only. The collector skips records
# of any facility but 0 (the kernel's). So first a daemon started as on a real node is shown to skip
# them; then one started with RDMAHD_TEST_KMSG_USER_RECORDS=1 (test only, collectors/kernel_log.h)
# takes facility 1 too and reads them through the same path: the kernel's ring and record format
# (sequence, monotonic time), the non-blocking read of /dev/kmsg, the look-back at start, the rules,
# the mapping to a device and the check. What it cannot prove: that the kernel gives a driver's
# printk facility 0 (documented kernel behaviour; the saved-log and unit tests take real captures).
# rxe0 has no PCI function, so the lines name its netdev the way mlx5e's netdev_printk does
# ("mlx5_core <PCI> veth0: ..."); mlx5's health lines are dev_printk (PCI address only) on real
# hardware, whose mapping by PCI address the unit tests cover (collectors/kernel_log_test.cc).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
netdev="$RDMAHD_VM_NETDEV"
past_cache_window() { sleep 0.3; }

# verdict FILE CHECK SUBJECT FIELD: FIELD (status, reason) of CHECK for SUBJECT in /api/v1/checks
# or `check --output=json` output.
verdict() {
  jq -r --arg c "$2" --arg s "$3" --arg f "$4" '
    [.. | objects | select(has("check") and has("subject")) | select(.check == $c and .subject == $s)
        | (.[$f] // .status // .verdict)] | if length == 1 then .[0] else "<\(length) verdicts>" end' "$1"
}
# statuses FILE CHECK: "subject=status" of every verdict of CHECK, sorted (for comparisons).
statuses() {
  jq -r --arg c "$2" '[.. | objects | select(has("check") and has("subject")) | select(.check == $c)
                       | "\(.subject)=\(.status // .verdict)"] | sort | join(" ")' "$1"
}

step "the lines, written to /dev/kmsg"
# The same texts as mlx5's (health.c poll_health, events.c temp_warn, cmd.c mlx5_cmd_out_err), and
# one about a PCI function this VM does not have.
mark="$(date +%s)"
echo "<3>mlx5_core 0000:00:00.0 $netdev: poll_health:471:(pid 0): device's health compromised - reached miss count" >/dev/kmsg
echo "<4>mlx5_core 0000:00:00.0 $netdev: temp_warn:170:(pid 0): High temperature on sensors with bit set 0 1" >/dev/kmsg
echo "<3>mlx5_core 0000:00:00.0 $netdev: mlx5_cmd_out_err:835:(pid 18360): ACCESS_REG(0x805) op_mod(0x1) failed, status bad operation(0x2), syndrome (0x9a6171), err(-22)" >/dev/kmsg
echo "<2>mlx5_core 0000:99:00.0: poll_health:478:(pid 0): Fatal error 1 detected" >/dev/kmsg
# The kernel's own stamp: facility 1 (user), whatever the prefix said.
# (No /dev/fd in the guest: files, not process substitution.)
dd if=/dev/kmsg of="$dir/written.kmsg" bs=8192 iflag=nonblock 2>/dev/null || true
grep -E "^11,[0-9]+,[0-9]+,[^;]*;mlx5_core 0000:00:00.0 $netdev: poll_health" "$dir/written.kmsg" >/dev/null ||
  fail "the test line is not in /dev/kmsg with facility 1 (user)"
ok "4 lines in /dev/kmsg, facility 1 (written at $mark)"

step "a daemon as on a real node skips them (facility 1 is not the kernel's)"
start_daemon --log.level=info
scrape "$dir/plain.json" api/v1/checks
past_cache_window
scrape "$dir/plain.prom"
expect_eq "$(verdict "$dir/plain.json" nic_health rxe0 status)" ok "nic_health rxe0 (user-space lines skipped)"
expect_num "$(metric_one "$dir/plain.prom" rdma_kernel_log_readable)" "==" 1 "rdma_kernel_log_readable"
expect_num "$(metric_one "$dir/plain.prom" rdma_kernel_log_records_total)" ">=" 4 "records read (the 4 lines among them)"
! grep -q '^rdma_kernel_events_total{' "$dir/plain.prom" || fail "events from user-space lines: $(grep '^rdma_kernel_events_total{' "$dir/plain.prom")"
ok "no rdma_kernel_events_total series"
stop_daemon

step "a daemon with RDMAHD_TEST_KMSG_USER_RECORDS=1 takes them (look-back at start)"
export RDMAHD_TEST_KMSG_USER_RECORDS=1
start_daemon --log.level=info
scrape "$dir/live.json" api/v1/checks
past_cache_window
scrape "$dir/live.prom"
status="$(verdict "$dir/live.json" nic_health rxe0 status)"
reason="$(verdict "$dir/live.json" nic_health rxe0 reason)"
expect_eq "$status" failed "nic_health rxe0"
[[ "$reason" == *"health compromised - reached miss count"* ]] || fail "nic_health rxe0 reason does not quote the line: $reason"
ok "reason: $reason"
for e in mlx5_health_compromised:critical mlx5_temperature_warning:warning command_failed:info; do
  expect_num "$(metric_one "$dir/live.prom" rdma_kernel_events_total device=rxe0 event="${e%%:*}" severity="${e#*:}")" \
    "==" 1 "rdma_kernel_events_total{rxe0,${e%%:*}}"
  last="$(metric_one "$dir/live.prom" rdma_kernel_event_last_seen_timestamp_seconds device=rxe0 event="${e%%:*}" severity="${e#*:}")"
  expect_num "$(awk -v l="$last" -v m="$mark" 'BEGIN { d = l - m; print (d < 0 ? -d : d) }')" "<=" 5 \
    "last seen of ${e%%:*} within 5 s of the write"
done
! grep -q 'event="mlx5_fw_fatal"' "$dir/live.prom" || fail "the line about 0000:99:00.0 was attributed to a device"
ok "the line about 0000:99:00.0 (not this VM's) is attributed to no device"

step "FEC, module EEPROM and devlink on rxe0/$netdev: unknown with the reason"
for c in link_margin module_health devlink_health; do
  jq -r --arg c "$c" '.. | objects | select(has("check") and has("subject")) | select(.check == $c)
                      | "\(.check) \(.subject): \(.status // .verdict): \(.reason)"' "$dir/live.json"
  n="$(jq --arg c "$c" '[.. | objects | select(has("check") and has("subject")) | select(.check == $c)] | length' "$dir/live.json")"
  expect_num "$n" ">=" 1 "$c verdicts"
  bad="$(jq -r --arg c "$c" '.. | objects | select(has("check") and has("subject")) | select(.check == $c)
                             | select((.status // .verdict) != "unknown" or (.reason // "") == "") | .subject' "$dir/live.json")"
  [[ -z "$bad" ]] || fail "$c not unknown with a reason for: $bad"
done
jq -r '.. | objects | select(has("check") and has("subject"))
         | select(.check == "link_margin" or .check == "module_health")
         | "\(.check) \(.subject): \(.status // .verdict): \(.reason)"' "$dir/live.json" >"$dir/optics.txt"
grep -Ei 'unknown: .*(not supported|EOPNOTSUPP)' "$dir/optics.txt" >/dev/null ||
  fail "link_margin/module_health reasons do not say the kernel does not support it"
expect_collectors_succeeded "$dir/live.prom"

step "check --path.kmsg on the saved log gives the live daemon's verdicts"
live="$(statuses "$dir/live.json" nic_health)"
ok "live nic_health: $live"
dmesg -r >"$dir/saved-dmesg-r.log"
dd if=/dev/kmsg of="$dir/saved-kmsg.log" bs=8192 iflag=nonblock 2>/dev/null || true
dmesg >"$dir/saved-dmesg.log"
for f in saved-dmesg-r saved-kmsg saved-dmesg; do
  echo "$f.log: $(grep -m1 'health compromised' "$dir/$f.log")"
done
for f in saved-dmesg-r saved-kmsg saved-dmesg; do
  timeout 60 "$RDMAHD_BIN" check --path.kmsg="$dir/$f.log" --output=json >"$dir/$f.check.json" 2>"$dir/$f.check.err"
  jq -e . "$dir/$f.check.json" >/dev/null || fail "check --path.kmsg=$f.log: not JSON: $(head -c 300 "$dir/$f.check.err")"
  expect_eq "$(statuses "$dir/$f.check.json" nic_health)" "$live" "nic_health of check --path.kmsg=$f.log"
  saved_reason="$(verdict "$dir/$f.check.json" nic_health rxe0 reason)"
  [[ "$saved_reason" == *"health compromised - reached miss count"* ]] || fail "$f: reason: $saved_reason"
done
# Without the test variable, a copy of /dev/kmsg keeps the facility ("11," = user, level 3) and its
# lines are skipped as the daemon skipped them. `dmesg -r` writes the level only ("<3>", as above)
# and plain `dmesg` nothing: in those formats user-space lines cannot be told from the kernel's and
# read as the kernel's (a limit of the format, said in docs/vm-tests.md).
unset RDMAHD_TEST_KMSG_USER_RECORDS
for f in saved-kmsg:ok saved-dmesg-r:failed saved-dmesg:failed; do
  timeout 60 "$RDMAHD_BIN" check --path.kmsg="$dir/${f%%:*}.log" --output=json >"$dir/${f%%:*}.plain.json" 2>/dev/null
  expect_eq "$(verdict "$dir/${f%%:*}.plain.json" nic_health rxe0 status)" "${f#*:}" \
    "nic_health rxe0 of ${f%%:*}.log without the test variable"
done
stop_daemon
