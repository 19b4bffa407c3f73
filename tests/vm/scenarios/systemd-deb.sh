#!/usr/bin/env bash
# systemd-deb (single VM booted with systemd as PID 1, vm-run.sh --init=systemd): the .deb as an
# operator installs it, on a real Soft-RoCE device under a real service manager.
#   dpkg -i: the system user exists and the service is started; it is active only once READY
#   (/-/ready answers at that moment) and serves rxe0 from inside its sandbox; the journal carries
#   structured fields; `systemctl reload` with a broken config keeps the old one, a fixed one is
#   taken; installing the same package again leaves the running daemon alone; the watchdog
#   restarts a SIGSTOPped daemon; `systemctl stop` is clean; dpkg -r stops and removes it, dpkg -P
#   removes the conffiles.
# Argument: the .deb (a host path; the host's / is the guest's lower root).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
deb="${1:-}"
[[ -r "$deb" ]] || fail "no .deb given (argument 1): '$deb'"
unit=rdma-healthd.service
url=http://127.0.0.1:9872
[[ -d /run/systemd/system ]] || fail "not booted with systemd (vm-run.sh --init=systemd)"

prop() { systemctl show -P "$1" "$unit"; }
get() { curl -sS -m 10 -o "$2" -w '%{http_code}' "$url/$1"; }
journal_tail() { journalctl -u "$unit" --no-pager -n 30 -o short-monotonic 2>&1 | sed 's/^/  journal: /'; }
trap 'journal_tail' EXIT

step "dpkg -i $(basename "$deb")"
dpkg -i "$deb" >"$RDMAHD_VM_OUT/dpkg-install.log" 2>&1 || { cat "$RDMAHD_VM_OUT/dpkg-install.log"; fail "dpkg -i failed"; }
ok "installed: $(dpkg-query -W -f='${Package} ${Version} ${Status}' rdma-healthd)"
expect_eq "$(id -un rdma-healthd 2>&1)" "rdma-healthd" "system user"
expect_eq "$(getent passwd rdma-healthd | cut -d: -f7)" "/usr/sbin/nologin" "its shell"
[[ -f /etc/rdma-healthd/config.yaml && -f /etc/default/rdma-healthd ]] || fail "conffiles missing"
ok "conffiles in place"
expect_eq "$(systemctl is-enabled "$unit")" enabled "enabled on first install"

step "started by postinst; active only once READY"
# Type=notify: "activating" until READY=1. Poll both the state and /-/ready: the first time the
# unit is active, the daemon must already answer ready.
deadline=$((SECONDS + 60))
seen_activating=no
while :; do
  state="$(prop ActiveState)"
  [[ "$state" == activating ]] && seen_activating=yes
  if [[ "$state" == active ]]; then
    code="$(get -/ready /dev/null)"
    expect_eq "$code" 200 "/-/ready when systemd first reports active"
    break
  fi
  [[ "$state" == failed ]] && fail "the service failed to start"
  ((SECONDS < deadline)) || fail "not active within 60 s (state $state)"
  sleep 0.1
done
ok "active (seen activating first: $seen_activating), status: $(prop StatusText)"
expect_eq "$(prop Type)" notify "Type"
pid1="$(prop MainPID)"
expect_eq "$(ps -o user= -p "$pid1" | tr -d ' ')" "rdma-healthd" "the daemon's user"
expect_num "$(prop WatchdogUSec)" ">" 0 "WatchdogUSec"

step "serves rxe0 from inside the sandbox"
code="$(get metrics "$RDMAHD_VM_OUT/metrics.txt")"
expect_eq "$code" 200 "GET /metrics"
m="$RDMAHD_VM_OUT/metrics.txt"
expect_num "$(metric_one "$m" rdma_devices_found)" "==" 1 "rdma_devices_found"
expect_num "$(metric_one "$m" rdma_port_state_id device=rxe0 port=1)" "==" 4 "rdma_port_state_id{rxe0,1}"
expect_num "$(metric_one "$m" rdma_healthd_collector_success collector=verbs)" "==" 1 \
  "verbs collector (opens /dev/infiniband/uverbs0 as rdma-healthd)"
expect_collectors_succeeded "$m"

step "journal: structured fields"
# No limits policy in the default config: device_limits is unknown for rxe0, a verdict the daemon
# logs at start, with each of its facts in a field of its own.
wait_until 20 "a device_limits verdict in the journal" \
  sh -c "journalctl -u $unit -o json --no-pager | jq -c 'select(.CHECK == \"device_limits\")' | grep -q ."
entry="$(journalctl -u "$unit" -o json --no-pager | jq -c 'select(.CHECK == "device_limits")' | head -n1)"
expect_eq "$(jq -r .SUBJECT <<<"$entry")" "rxe0" "SUBJECT of the device_limits entry"
expect_eq "$(jq -r .VERDICT <<<"$entry")" "unknown" "VERDICT"
expect_eq "$(jq -r .PRIORITY <<<"$entry")" "6" "PRIORITY (info)"
expect_eq "$(jq -r .SYSLOG_IDENTIFIER <<<"$entry")" "rdma-healthd" "SYSLOG_IDENTIFIER"
[[ "$(jq -r '.REASON // empty' <<<"$entry")" == *max_qp* ]] || fail "REASON field without the facts: $entry"
[[ -n "$(jq -r '.FIX // empty' <<<"$entry")" ]] || fail "no FIX field: $entry"
ok "entry: $(jq -c '{MESSAGE, CHECK, SUBJECT, VERDICT, PRIORITY}' <<<"$entry")"

step "systemctl reload with a broken config keeps the running one"
cp /etc/rdma-healthd/config.yaml /root/config.yaml.good
printf 'roce:\n  priority: 9\n' >/etc/rdma-healthd/config.yaml
systemctl reload "$unit" || fail "systemctl reload failed"
wait_until 20 "reload failure reported" sh -c \
  "curl -fsS -m 5 $url/metrics | grep -qx 'rdma_healthd_config_last_reload_successful 0'"
expect_eq "$(prop ActiveState)" active "state after a bad reload"
expect_eq "$(prop MainPID)" "$pid1" "MainPID after a bad reload"
journalctl -u "$unit" --no-pager -o cat | grep -q "configuration reload failed" ||
  fail "no 'configuration reload failed' in the journal"
ok "bad reload logged, old config kept"
cp /root/config.yaml.good /etc/rdma-healthd/config.yaml
systemctl reload "$unit" || fail "systemctl reload failed"
wait_until 20 "reload success reported" sh -c \
  "curl -fsS -m 5 $url/metrics | grep -qx 'rdma_healthd_config_last_reload_successful 1'"
ok "fixed config reloaded"

step "installing the package again leaves the running daemon alone"
dpkg -i "$deb" >>"$RDMAHD_VM_OUT/dpkg-install.log" 2>&1 || fail "second dpkg -i failed"
expect_eq "$(prop MainPID)" "$pid1" "MainPID after upgrade-install"
expect_eq "$(prop ActiveState)" active "state after upgrade-install"

step "the watchdog restarts a stopped daemon"
mkdir -p "/run/systemd/system/$unit.d"
printf '[Service]\nWatchdogSec=4s\nTimeoutAbortSec=3s\nRestartSec=1s\n' >"/run/systemd/system/$unit.d/50-test.conf"
systemctl daemon-reload
systemctl restart "$unit" || fail "restart with the test watchdog failed"
wait_until 30 "active again" sh -c "[ \"\$(systemctl show -P ActiveState $unit)\" = active ]"
pid2="$(prop MainPID)"
restarts="$(prop NRestarts)"
sleep 6   # several watchdog periods: a live daemon keeps feeding it
expect_eq "$(prop MainPID)" "$pid2" "MainPID after 6 s of a 4 s watchdog (fed)"
kill -STOP "$pid2"
wait_until 40 "restart after the watchdog fired" sh -c \
  "p=\$(systemctl show -P MainPID $unit); [ \"\$p\" != $pid2 ] && [ \"\$p\" != 0 ] && [ \"\$(systemctl show -P ActiveState $unit)\" = active ]"
expect_num "$(prop NRestarts)" ">" "$restarts" "NRestarts"
journalctl -u "$unit" --no-pager -o cat | grep -qi "watchdog timeout" || fail "no watchdog timeout in the journal"
ok "watchdog fired and the daemon came back as pid $(prop MainPID)"
rm -rf "/run/systemd/system/$unit.d"
systemctl daemon-reload

step "clean stop"
systemctl stop "$unit" || fail "systemctl stop failed"
expect_eq "$(prop ActiveState)" inactive "state after stop"
expect_eq "$(prop Result)" success "Result after stop"
expect_eq "$(prop ExecMainStatus)" 0 "exit status"

step "dpkg -r, then dpkg -P"
systemctl start "$unit" && wait_until 30 "active" sh -c "[ \"\$(systemctl show -P ActiveState $unit)\" = active ]"
dpkg -r rdma-healthd >"$RDMAHD_VM_OUT/dpkg-remove.log" 2>&1 || { cat "$RDMAHD_VM_OUT/dpkg-remove.log"; fail "dpkg -r failed"; }
expect_eq "$(prop ActiveState)" inactive "state after dpkg -r"
[[ ! -e /usr/sbin/rdma-healthd ]] || fail "binary still there after dpkg -r"
[[ -f /etc/rdma-healthd/config.yaml ]] || fail "dpkg -r removed a conffile"
ok "removed; conffiles kept"
dpkg -P rdma-healthd >>"$RDMAHD_VM_OUT/dpkg-remove.log" 2>&1 || fail "dpkg -P failed"
[[ ! -e /etc/rdma-healthd/config.yaml && ! -e /etc/default/rdma-healthd ]] || fail "conffiles left after purge"
ok "purged"
trap - EXIT
