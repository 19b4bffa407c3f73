#!/usr/bin/env bash
# deb-run.sh BUILD_DIR SCENARIO [VM-RUN OPTIONS...]: builds the .deb from BUILD_DIR with cpack, then
# boots a VM with systemd as PID 1 (vm-run.sh --init=systemd) and runs SCENARIO with the package's
# path as its argument. Exits like vm-run.sh (77 = VM unavailable here).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$(realpath "$1")" scenario="$2"
shift 2
out="$build/vm-deb"
rm -rf "$out"
mkdir -p "$out"
(cd "$build" && cpack -G DEB -B "$out" >"$out/cpack.log" 2>&1) || { cat "$out/cpack.log" >&2; exit 1; }
deb="$(ls "$out"/rdma-healthd_*.deb)"
exec "$here/vm-run.sh" --init=systemd "$@" "$scenario" "$deb"
