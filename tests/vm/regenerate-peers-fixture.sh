#!/usr/bin/env bash
# regenerate-peers-fixture.sh: boots the single-VM topology, lets a daemon probe another on rxe0
# (tests/vm/capture-peers-exposition.sh) and replaces tests/fixtures/peers/metrics.prom with the
# prober's /metrics. The Prometheus e2e test serves it to a real Prometheus, so the dashboard's
# peer panels and the peer alert rules are checked against what the daemon really exports.
#
#   tests/vm/regenerate-peers-fixture.sh --daemon=build/rdma-healthd
#   then review `git diff tests/fixtures/peers`
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
fixture="$(cd "$here/../.." && pwd)/tests/fixtures/peers"
[[ "${1:-}" == --daemon=* ]] || { echo "usage: $0 --daemon=PATH_TO_rdma-healthd" >&2; exit 2; }

out="$(mktemp -d "${TMPDIR:-/tmp}/rdmahd-peers-capture.XXXXXX")"
trap 'rm -rf "$out"' EXIT
status=0
"$here/vm-run.sh" "$1" --out="$out" "$here/capture-peers-exposition.sh" || status=$?
((status == 0)) || { echo "regenerate-peers-fixture: capture failed (status $status)" >&2; exit "$status"; }
captured="$out/node1/out/peers"
grep -q '^rdma_peer_latency_quantile_seconds{' "$captured/metrics.prom" ||
  { echo "regenerate-peers-fixture: capture incomplete" >&2; exit 1; }

mkdir -p "$fixture"
cp "$captured/metrics.prom" "$fixture/metrics.prom"
cat >"$fixture/README.md" <<README
# A prober daemon's /metrics on Soft-RoCE, captured from a real kernel

Written by rdma-healthd, not by hand: \`tests/vm/regenerate-peers-fixture.sh\` boots Debian's
kernel $(<"$captured/kernel-release") under QEMU with rxe0 on veth0 (192.0.2.1/24), runs a responder
daemon and a prober daemon probing 192.0.2.1 (latency every second, 200 iterations; a 500 ms RDMA
WRITE stream every 10 s; \`max_latency_p99_us: 100000\`, \`min_bandwidth_gbps: 0.01\`) and 192.0.2.99,
where nobody answers, and copies the prober's /metrics once both kinds have succeeded a few times
(see tests/vm/capture-peers-exposition.sh).

\`tests/e2e/prometheus_alerts_e2e_test.py\` serves it to a real Prometheus beside live daemons, so
the dashboard's peer panels have data. Regenerate rather than edit.
README
echo "regenerate-peers-fixture: wrote $fixture ($(grep -c '^rdma_peer_' "$fixture/metrics.prom") rdma_peer_* samples)"
