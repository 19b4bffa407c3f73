#!/usr/bin/env bash
# Sets up everything on a fresh Debian 12 machine (packages, build) and runs rdma-healthd on its
# built-in defaults: /metrics on :9872, host checks served even with no RDMA device.
# Extra arguments go to rdma-healthd (e.g. --web.listen-address=127.0.0.1:9872).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh build
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
ninja -C build rdma-healthd
exec build/rdma-healthd "$@"
