#!/usr/bin/env bash
# boot-retry-test.sh: the harness's own test of what it does with a guest that never boots.
#
# A boot that never reaches the initramfs (seen in CI: an empty console until QEMU was killed) is
# simulated with RDMAHD_VM_FREEZE_BOOTS, which starts the first boot attempts with their vCPUs
# stopped. Asserts that vm-run.sh
#   1. reports the stuck boot, boots again and passes the scenario on the next attempt;
#   2. fails (exit 1) with a reason once every attempt is stuck;
#   3. leaves no QEMU running either way.
# Exit: 0 pass, 1 fail, 77 VM unavailable here (vm-run.sh's skip, passed on).
set -uo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scenario="$here/scenarios/smoke.sh"
log="$(mktemp)"
trap 'rm -f "$log"' EXIT

fail() {
  echo "FAIL: $*"
  sed 's/^/  | /' "$log"
  exit 1
}

# No QEMU of this harness's smoke runs may outlive vm-run.sh.
expect_no_qemu() {
  local left
  left="$(pgrep -af -- '-name rdmahd-vm-smoke-node' || true)"
  [[ -z "$left" ]] || fail "$1: QEMU still running after vm-run.sh exited: $left"
}

echo "== first boot frozen: reported, booted again, scenario passes"
status=0
RDMAHD_VM_FREEZE_BOOTS=1 RDMAHD_VM_BOOT_TIMEOUT=8 "$here/vm-run.sh" "$scenario" >"$log" 2>&1 ||
  status=$?
((status != 77)) || { cat "$log"; exit 77; }
((status == 0)) || fail "vm-run.sh exited $status, want 0"
grep -q 'node1: the guest did not reach its job within 8 s (boot attempt 1 of 3' "$log" ||
  fail "the stuck first boot is not reported"
grep -q 'booted on attempt 2 of 3' "$log" || fail "the second attempt is not reported"
grep -q 'ok: sent_pkts after 200 ping-pongs' "$log" || fail "the scenario's assertions did not run"
expect_no_qemu "after a retried boot"
echo "ok: stuck boot reported, scenario passed on attempt 2"

echo "== every boot frozen: a failure with its reason"
status=0
RDMAHD_VM_FREEZE_BOOTS=2 RDMAHD_VM_BOOT_ATTEMPTS=2 RDMAHD_VM_BOOT_TIMEOUT=3 \
  "$here/vm-run.sh" "$scenario" >"$log" 2>&1 || status=$?
((status == 1)) || fail "vm-run.sh exited $status, want 1"
grep -q 'no boot reached its job in 2 attempts' "$log" || fail "no reason for the failure"
(($(grep -c 'did not reach its job' "$log") == 2)) || fail "want both stuck boots reported"
! grep -q 'ok: ' "$log" || fail "the scenario ran although no guest booted"
expect_no_qemu "after giving up"
echo "ok: exit 1 after 2 stuck boots, each reported"
