#!/usr/bin/env bash
# Builds rdma-healthd (Release) and runs the scrape benchmark against node_exporter on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build bench
cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build-release rdma-healthd rdmahd_pread_floor
exec python3 bench/scrape_bench.py --rdma-healthd build-release/rdma-healthd "$@"
