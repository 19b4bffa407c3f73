#!/usr/bin/env bash
# Builds rdma-healthd (Release) and runs the scrape benchmark against node_exporter on this machine.
# Extra arguments go to bench/scrape_bench.py (e.g. --no-ecn, --baseline OTHER_BINARY).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build bench
launcher=()
if command -v ccache >/dev/null; then launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" >/dev/null
ninja -C build-release rdma-healthd rdmahd_pread_floor
exec python3 bench/scrape_bench.py --rdma-healthd build-release/rdma-healthd "$@"
