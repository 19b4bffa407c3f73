#!/usr/bin/env bash
# probe-peer (peer topology, runs on both VMs): each VM runs the daemon with its probe responder
# (allow 192.0.2.0/24) and probes the other across the QEMU link with `rdma-healthd probe`:
# latency both ways, and node 1 also bandwidth. Each keeps its daemon up until the peer's probe
# sessions show in its log (bounded), so neither leaves before the other has measured. (Under TCG
# with one vCPU per VM a round trip takes milliseconds, not microseconds: no latency bound here.)
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
[[ -n "$RDMAHD_VM_PEER_ADDR" ]] || fail "probe-peer needs the peer topology"
peer="$RDMAHD_VM_PEER_ADDR"
printf 'peers:\n  responder:\n    enabled: true\n    port: 18600\n    allow: [192.0.2.0/24]\n' >"$dir/responder.yaml"

step "node $RDMAHD_VM_NODE ($RDMAHD_VM_ADDR): daemon with the responder, peer $peer"
start_daemon --config.file="$dir/responder.yaml" --log.level=debug
wait_until 15 "responder listening" grep -q 'probe responder listening' "$dir/daemon.log"
wait_until 90 "ping $peer" busybox ping -c1 -W1 "$peer"

# The peer's daemon may still be starting: retry while nobody answers on its port (bounded).
step "latency to $peer"
deadline=$((SECONDS + 90))
until timeout 60 "$RDMAHD_BIN" probe "$peer" --iterations 100 >"$dir/lat.out" 2>"$dir/lat.err"; do
  cat "$dir/lat.err"
  grep -q 'failed (unreachable)\|failed (connect_timeout)' "$dir/lat.err" && ((SECONDS < deadline)) ||
    fail "probe to $peer failed"
  sleep 1
done
cat "$dir/lat.out"
read -r bytes iters tmin _ typical _ <<<"$(awk '$1 == 2 && $2 == 100' "$dir/lat.out")"
expect_eq "$bytes/$iters" "2/100" "#bytes/#iterations"
expect_num "$typical" ">=" "$tmin" "t_typical (us) across the link"
expect_num "$tmin" ">" 0 "t_min (us) across the link"

if ((RDMAHD_VM_NODE == 1)); then
  step "bandwidth to $peer"
  timeout 60 "$RDMAHD_BIN" probe "$peer" --bandwidth --duration 1 >"$dir/bw.out" 2>"$dir/bw.err" ||
    { cat "$dir/bw.err"; fail "bandwidth probe to $peer failed"; }
  cat "$dir/bw.out"
  read -r _ writes secs _ gbs _ <<<"$(awk '$1 == 65536' "$dir/bw.out")"
  expect_num "$writes" ">" 0 "writes completed"
  expect_num "$gbs" ">" 0 "BW average (Gb/s) across the link"
fi

step "waiting for the peer's probe sessions"
wait_until 120 "a latency session from $peer" grep -q "probe responder: session.*$peer.*latency" "$dir/daemon.log"
if ((RDMAHD_VM_NODE == 2)); then
  wait_until 120 "a bandwidth session from $peer" grep -q "probe responder: session.*$peer.*bandwidth" "$dir/daemon.log"
  # and its end: the stream lasts 1 s
  sleep 3
fi
ok "the peer measured us"
stop_daemon
