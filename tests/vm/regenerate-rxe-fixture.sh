#!/usr/bin/env bash
# regenerate-rxe-fixture.sh: boots the single-VM topology, captures rxe0's sysfs (and its netdev's)
# as the kernel wrote it, and replaces tests/fixtures/rxe/ with it. Unit tests read it with
# --path.sysfs=<fixture>/sys (rdmahd::testing::ProjectFixture("rxe/sys")).
#
#   tests/vm/regenerate-rxe-fixture.sh        then review `git diff --stat tests/fixtures/rxe`
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixture="$(cd "$here/../.." && pwd)/tests/fixtures/rxe"

out="$(mktemp -d "${TMPDIR:-/tmp}/rdmahd-rxe-capture.XXXXXX")"
trap 'rm -rf "$out"' EXIT
status=0
"$here/vm-run.sh" --out="$out" "$here/capture-rxe-sysfs.sh" || status=$?
((status == 0)) || { echo "regenerate-rxe-fixture: capture failed (status $status)" >&2; exit "$status"; }
captured="$out/node1/out/rxe"
[[ -L "$captured/sys/class/infiniband/rxe0" && -s "$captured/sys/devices/virtual/infiniband/rxe0/ports/1/state" ]] ||
  { echo "regenerate-rxe-fixture: capture incomplete" >&2; exit 1; }

kernel="$(<"$captured/kernel-release")"
rm -f "$captured/kernel-release"
rm -rf "$fixture"
mkdir -p "$fixture"
cp -a "$captured/sys" "$fixture/sys"
cat >"$fixture/README.md" <<README
# Soft-RoCE (rdma_rxe) sysfs, captured from a real kernel

Written by the kernel, not by hand: \`tests/vm/regenerate-rxe-fixture.sh\` boots Debian's kernel
$kernel under QEMU, creates rxe0 on veth0 (MAC 02:00:00:00:00:01, 192.0.2.1/24; the VM's own
addresses), runs 50 ib_send_lat ping-pongs to rxe0's own GID so the counters are not all zero, and
copies what sysfs shows (see tests/vm/capture-rxe-sysfs.sh for what is left out: unreadable
attributes, power/, queues/, unused GID and P_Key entries beyond the first $(grep -o 'KEEP_UNUSED=[0-9]*' "$here/capture-rxe-sysfs.sh" | cut -d= -f2)).

Use it as a --path.sysfs root: \`ProjectFixture("rxe/sys")\`. Regenerate rather than edit.

Facts worth knowing (as captured): state "4: ACTIVE", phys_state "5: LinkUp", link_layer
"Ethernet", rate "10 Gb/sec (1X FDR10)", empty fw_ver, GID 0 the link-local and GID 1 the IPv4
address, both "RoCE v2"; per-port hw_counters/ but no counters/ folder, and no device/ link (rxe0
is a virtual device; its netdev is in the \`parent\` attribute and gid_attrs/ndevs/).
README
echo "regenerate-rxe-fixture: wrote $fixture ($(find "$fixture/sys" -type f | wc -l) files, kernel $kernel)"
