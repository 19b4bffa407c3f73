#!/usr/bin/env bash
# probe-on-rxe (single VM): the daemon's probe responder on rxe0 answers `rdma-healthd probe` from
# the same VM (rxe loops its own GID back): perftest-style latency and bandwidth lines. Garbage
# (ib_send_lat -R at the responder's port: an rdma_cm client whose private data is not a probe
# hello; UDP junk at RoCE v2's port 4791) is refused and the next probe is answered. A reload
# that drops us from responder.allow makes the probe fail as rejected (not_allowed), and one that
# restores it makes it pass, on the same listener. The verbs objects on rxe0 are back at their
# baseline afterwards. The daemon killed (SIGKILL) during a long probe makes that probe fail within
# seconds (unreachable: the kernel disconnected it; or a wc_* or timeout reason), and a restarted
# daemon answers again. Then, in one process (the unit test binary next to the daemon, tests
# ProbeOnDevice.*): latency and bandwidth against an in-process responder, each refusal code, and
# 1000 failed probes leaving the process's QP/CQ/MR/PD/cm_id counts where they were.
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
addr="$RDMAHD_VM_ADDR"
unit="$(dirname "$RDMAHD_BIN")/rdmahd_unit_tests"
config="$dir/responder.yaml"

write_config() {
  printf 'peers:\n  responder:\n    enabled: true\n    port: 18600\n    allow: [%s]\n' "$1" >"$config"
}

# resources: "pd cq qp mr cm_id" of rxe0 from `rdma resource show`.
resources() {
  rdma -j resource show | jq -r '.[] | select(.ifname == "rxe0") | "pd \(.pd) cq \(.cq) qp \(.qp) mr \(.mr) cm_id \(.cm_id)"'
}

# run_probe NAME ARGS...: `rdma-healthd probe ARGS` (bounded), output in $dir/NAME.{out,err};
# prints the exit status.
run_probe() {
  local name="$1"
  shift
  timeout 60 "$RDMAHD_BIN" probe "$@" >"$dir/$name.out" 2>"$dir/$name.err"
  echo $?
}

reload() {
  local before
  before="$(grep -c 'configuration reloaded' "$dir/daemon.log")"
  kill -HUP "$RDMAHD_DAEMON_PID"
  wait_until 15 "reload #$((before + 1))" test "$(grep -c 'configuration reloaded' "$dir/daemon.log")" -gt "$before"
}

step "daemon with the probe responder on port 18600"
write_config 192.0.2.0/24
start_daemon --config.file="$config" --log.level=debug
wait_until 15 "responder listening" grep -q 'probe responder listening' "$dir/daemon.log"
baseline="$(resources)"
ok "rxe0 baseline: $baseline"

step "latency: rdma-healthd probe $addr"
status="$(run_probe lat1 "$addr" --iterations 1000)"
cat "$dir/lat1.out" "$dir/lat1.err"
expect_eq "$status" 0 "exit status of probe (latency)"
# (no process substitution: the guest has no /dev/fd)
read -r bytes iters tmin tmax typical avg _ <<<"$(awk '$1 == 2 && $2 == 1000' "$dir/lat1.out")"
expect_eq "$bytes/$iters" "2/1000" "#bytes/#iterations"
expect_num "$tmin" ">" 0 "t_min (us)"
expect_num "$typical" ">=" "$tmin" "t_typical (us)"
expect_num "$tmax" ">=" "$typical" "t_max (us)"
expect_num "$avg" ">" 0 "t_avg (us)"

step "bandwidth: rdma-healthd probe $addr --bandwidth"
status="$(run_probe bw1 "$addr" --bandwidth --duration 0.5 --queue-depth 64)"
cat "$dir/bw1.out" "$dir/bw1.err"
expect_eq "$status" 0 "exit status of probe (bandwidth)"
read -r _ writes secs _ gbs _ <<<"$(awk '$1 == 65536' "$dir/bw1.out")"
expect_num "$writes" ">" 0 "writes completed"
expect_num "$secs" ">=" 0.4 "stream duration (s)"
expect_num "$gbs" ">" 0 "BW average (Gb/s)"

step "garbage clients"
timeout 30 ib_send_lat -d rxe0 -R -p 18600 -n 5 "$addr" >"$dir/perftest-at-responder.log" 2>&1
perftest_status=$?
expect_num "$perftest_status" "!=" 0 "ib_send_lat -R against the responder fails"
for i in $(seq 1 200); do printf 'junk %d' "$i" >/dev/udp/"$addr"/4791; done
daemon_alive || fail "the daemon died of garbage"
grep -q 'probe responder: rejected.*bad_handshake' "$dir/daemon.log" ||
  fail "the responder did not log ib_send_lat's connect request as a bad handshake"
ok "ib_send_lat's request refused as bad_handshake"
status="$(run_probe lat2 "$addr" --iterations 200)"
cat "$dir/lat2.out" "$dir/lat2.err"
expect_eq "$status" 0 "exit status of the probe after garbage"

step "reload: responder.allow without us, then with us again"
write_config 10.0.0.0/8
reload
status="$(run_probe lat3 "$addr" --iterations 50)"
cat "$dir/lat3.err"
expect_eq "$status" 1 "exit status of a probe the responder refuses"
grep -q 'failed (rejected).*not_allowed' "$dir/lat3.err" || fail "no 'rejected ... not_allowed' in: $(cat "$dir/lat3.err")"
ok "refused as rejected/not_allowed"
write_config "$addr/32"
reload
status="$(run_probe lat4 "$addr" --iterations 50 --tos 104 --source "$addr")"
expect_eq "$status" 0 "exit status after allowing us again (with --tos 104 --source $addr)"
grep -c 'probe responder listening' "$dir/daemon.log" | { read -r n; expect_eq "$n" 1 "listeners started (reload applied in place)"; }

step "the responder killed mid-probe: a failure with a reason, then recovery"
timeout 40 "$RDMAHD_BIN" probe "$addr" --iterations 200000 >"$dir/killed.out" 2>"$dir/killed.err" &
probe_pid=$!
wait_until 30 "a session for the long probe" grep -q 'probe responder: session' "$dir/daemon.log"
sleep 1
kill -KILL "$RDMAHD_DAEMON_PID"
wait "$RDMAHD_DAEMON_PID" 2>/dev/null
RDMAHD_DAEMON_PID=
wait "$probe_pid"
status=$?
cat "$dir/killed.err"
expect_eq "$status" 1 "exit status of the probe whose responder was killed"
grep -Eq 'failed \((wc_[a-z_]+|timeout|unreachable)\)' "$dir/killed.err" || fail "no wc_*, timeout or unreachable reason"
ok "reason: $(grep -Eo 'failed \([a-z_]+\)' "$dir/killed.err")"
start_daemon --config.file="$config" --log.level=debug
wait_until 15 "responder listening again" test "$(grep -c 'probe responder listening' "$dir/daemon.log")" -ge 2
status="$(run_probe lat5 "$addr" --iterations 50)"
expect_eq "$status" 0 "exit status of a probe after the responder came back"

step "rxe0 verbs objects back at baseline"
wait_until 10 "rxe0 resources back at '$baseline' (now '$(resources)')" test "$(resources)" == "$baseline"
ok "rxe0: $(resources)"

step "in one process: ProbeOnDevice.* (1000 failed probes, refusals, latency and bandwidth)"
[[ -x "$unit" ]] || fail "no unit test binary next to the daemon: $unit"
RDMAHD_PROBE_DEVICE_ADDR="$addr" timeout 240 "$unit" --gtest_filter='ProbeOnDevice.*' >"$dir/device-tests.log" 2>&1
status=$?
grep -E '^\[ *(RUN|OK|FAILED|SKIPPED|PASSED) *\]|resource counts|Failure|Expected|Which is|reason|message' "$dir/device-tests.log" | head -60
expect_eq "$status" 0 "ProbeOnDevice tests"
grep -q 'SKIPPED' "$dir/device-tests.log" && fail "a device test skipped inside the VM"
daemon_alive || fail "daemon died"
stop_daemon
