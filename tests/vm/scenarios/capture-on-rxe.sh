#!/usr/bin/env bash
# capture-on-rxe (single VM, then the host): the support bundle round trip on a real Soft-RoCE node.
# In the guest: `rdma-healthd check --output=json` on rxe0 (the node's verdicts), then
# `rdma-healthd capture` into $RDMAHD_VM_OUT (copied out by vm-run.sh --out); the bundle holds
# rxe0's sysfs with its class link, veth0's DCB answer (`unsupported`: veth has no DCB) and driver
# statistics, the kernel log, metrics, check.json, the redacted config and the manifest.
# On the host (`capture-on-rxe.sh --host OUTDIR BINARY`, run by ctest after the VM):
# `rdma-healthd check --capture` of the bundle gives the guest's verdicts: the same exit code and,
# for every (check, subject), the same status, except what only the live kernel answers and a file
# cannot carry (docs/capture.md): device_access (device nodes), port_active_mtu and device_limits
# (verbs), which must then be `unknown`. The bundle's own check.json must equal the guest's check.
set -uo pipefail

# The live-only checks (docs/capture.md, "What a bundle cannot carry").
readonly LIVE_ONLY='["device_access","port_active_mtu","device_limits"]'

# statuses FILE: "check<TAB>subject<TAB>status" of every verdict but the live-only ones, sorted.
statuses() {
  jq -r --argjson live "$LIVE_ONLY" \
    '.verdicts[] | select(.check as $c | $live | index($c) | not) | [.check, .subject, .status] | @tsv' "$1" | sort
}

if [[ "${1:-}" == "--host" ]]; then
  out="$2/node1/out" bin="$3"
  fail() { echo "FAIL: $*"; exit 1; }
  [[ -f "$out/rxe0.tar.gz" && -f "$out/live.json" ]] || fail "no bundle or live.json in $out (the guest part failed?)"
  host_json="$2/host-check.json"
  timeout 120 "$bin" check --capture="$out/rxe0.tar.gz" --output=json >"$host_json" 2>"$2/host-check.err"
  status=$?
  cat "$2/host-check.err"
  expect_status="$(jq -r .exit_code "$out/live.json")"
  [[ "$status" == "$expect_status" ]] || fail "check --capture on the host exited $status, the guest's check $expect_status"
  echo "ok: check --capture on the host exits $status, as the guest's check"
  n="$(statuses "$out/live.json" | wc -l)"
  ((n >= 5)) || fail "only $n verdicts to compare"
  if ! diff <(statuses "$out/live.json") <(statuses "$host_json"); then
    fail "verdicts differ between the guest (<) and the bundle judged on the host (>)"
  fi
  echo "ok: $n verdicts identical (check, subject, status)"
  not_unknown="$(jq -r --argjson live "$LIVE_ONLY" \
    '[.verdicts[] | select(.check as $c | $live | index($c)) | select(.status != "unknown")
      | "\(.check) \(.subject) \(.status)"] | join("; ")' "$host_json")"
  [[ -z "$not_unknown" ]] || fail "live-only checks judged from the bundle: $not_unknown"
  echo "ok: device_access, port_active_mtu, device_limits are unknown from the bundle"
  tar -xzOf "$out/rxe0.tar.gz" check.json >"$2/bundle-check.json" || fail "no check.json in the bundle"
  if ! diff <(statuses "$out/live.json") <(statuses "$2/bundle-check.json"); then
    fail "the bundle's check.json differs from the guest's check"
  fi
  echo "ok: the bundle's check.json holds the guest's verdicts"
  exit 0
fi

# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
need_daemon
dir="$RDMAHD_VM_OUT"
netdev="$RDMAHD_VM_NETDEV"
printf 'ports: {min_rate_gbps: 10}\nroce: {priority: 3, dscp: 26}\n' >"$dir/policy.yaml"
# A web config with a password hash and a key path: neither may reach the bundle.
# shellcheck disable=SC2016 # a bcrypt hash, not an expansion
hash='$2y$10$X8ktMYbWqTXfa6pZmTNXXuXBvd1OZ3hWK9QC4WzWf6W7xQ0u9tF6e'
# The web config is carried as the settings the daemon loads from it, so its files must load.
mkdir -p "$dir/private"
printf '%s\n' '-----BEGIN CERTIFICATE-----' MIIB '-----END CERTIFICATE-----' >"$dir/tls.crt"
printf '%s\n' '-----BEGIN PRIVATE KEY-----' KEYMATERIAL '-----END PRIVATE KEY-----' >"$dir/private/tls.key"
printf 'tls_server_config:\n  cert_file: tls.crt\n  key_file: private/tls.key\nbasic_auth_users:\n  prom: %s\n' \
  "'$hash'" >"$dir/web.yml"

step "the node's verdicts"
timeout 120 "$RDMAHD_BIN" check --config.file="$dir/policy.yaml" --output=json >"$dir/live.json" 2>"$dir/live.err"
status=$?
cat "$dir/live.err"
jq -e . "$dir/live.json" >/dev/null || fail "check output is not JSON: $(head -c 300 "$dir/live.json")"
expect_eq "$(jq -r .exit_code "$dir/live.json")" "$status" "exit_code in the document"
jq -e '[.verdicts[] | select(.subject | tostring | contains("rxe0"))] | length > 0' "$dir/live.json" >/dev/null ||
  fail "no verdict names rxe0"
ok "check exits $status with $(jq '.verdicts | length' "$dir/live.json") verdicts"

step "capture"
timeout 180 "$RDMAHD_BIN" capture --config.file="$dir/policy.yaml" --web.config.file="$dir/web.yml" \
  --output="$dir/rxe0.tar.gz" >"$dir/capture.out" 2>"$dir/capture.err"
expect_eq "$?" 0 "exit status of capture"
cat "$dir/capture.out" "$dir/capture.err"
tar -tzvf "$dir/rxe0.tar.gz" >"$dir/members.txt" || fail "the bundle is not a .tar.gz"
for m in sys/devices/virtual/infiniband/rxe0/ports/1/state "dcb/$netdev/pfc.json" "dcb/$netdev/ethtool-S.txt" \
  kernel-log.txt metrics.txt check.json manifest.json config/config.yaml config/web-config.yaml; do
  grep -q " $m\$" "$dir/members.txt" || fail "no $m in the bundle"
done
grep -q ' sys/class/infiniband/rxe0 -> ../../devices/virtual/infiniband/rxe0$' "$dir/members.txt" ||
  fail "sys/class/infiniband/rxe0 is not the kernel's link: $(grep 'class/infiniband/rxe0' "$dir/members.txt")"
ok "rxe0's sysfs (with its class link), $netdev's DCB and statistics, kernel log, metrics, verdicts, config"
expect_eq "$(tar -xzOf "$dir/rxe0.tar.gz" "dcb/$netdev/pfc.json")" unsupported "$netdev's pfc.json (veth has no DCB)"
! grep -q '^[cbph]' "$dir/members.txt" || fail "a device, FIFO or hard link in the bundle"
! tar -tzf "$dir/rxe0.tar.gz" | grep -q '^/\|\(^\|/\)\.\.\(/\|$\)' || fail "an absolute or .. member in the bundle"
if tar -xzOf "$dir/rxe0.tar.gz" | grep -aqF -e "$hash" -e private/tls.key -e KEYMATERIAL; then
  fail "the password hash, the key path or the key reached the bundle"
fi
ok "no password hash, key path or key in the bundle"
tar -xzOf "$dir/rxe0.tar.gz" manifest.json >"$dir/manifest.json"
expect_eq "$(jq -r .live "$dir/manifest.json")" true "manifest live"
expect_eq "$(jq -r .versions.kernel_release "$dir/manifest.json")" "$(uname -r)" "manifest kernel release"
expect_eq "$(jq -r .node_verdict_exit_code "$dir/manifest.json")" "$status" "manifest node_verdict_exit_code"
ok "manifest: $(jq -r '"\(.files) files, \(.bytes) bytes, \(.skipped | length) skipped listed"' "$dir/manifest.json")"

step "the bundle judged in the guest too (elsewhere: the host, after the VM)"
timeout 120 "$RDMAHD_BIN" check --capture="$dir/rxe0.tar.gz" --output=json >"$dir/guest-capture.json" 2>"$dir/guest-capture.err"
expect_eq "$?" "$status" "exit status of check --capture"
# Files, not <(...): the guest's busybox /dev has no /dev/fd.
statuses "$dir/live.json" >"$dir/live.tsv"
statuses "$dir/guest-capture.json" >"$dir/guest-capture.tsv"
diff "$dir/live.tsv" "$dir/guest-capture.tsv" ||
  fail "verdicts differ between check (<) and check --capture (>)"
ok "same verdicts from the bundle"
