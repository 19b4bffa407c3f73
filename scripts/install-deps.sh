#!/usr/bin/env bash
# Installs the Debian packages a tier needs, only those missing. Tiers: build, test, vm, bench, fresh.
# Usage: scripts/install-deps.sh build [test vm bench fresh ...]
set -euo pipefail

declare -A PKGS=(
  [build]="build-essential cmake ninja-build pkg-config libibverbs-dev librdmacm-dev
           libmicrohttpd-dev libgnutls28-dev zlib1g-dev libcrypt-dev libyaml-cpp-dev
           libspdlog-dev libfmt-dev libsystemd-dev libmnl-dev libcli11-dev nlohmann-json3-dev libgtest-dev
           libgmock-dev libre2-dev prometheus-cpp-dev libarchive-dev"
  [test]="ccache prometheus curl python3 python3-yaml iproute2 ethtool clang libclang-rt-14-dev lintian systemd dpkg-dev
          openssl apache2-utils dnsmasq-base chromium chromium-driver"
  [vm]="qemu-system-x86 busybox-static cpio kmod jq xz-utils curl rdma-core ibverbs-utils ibverbs-providers
        rdmacm-utils perftest iproute2"
  [bench]="prometheus-node-exporter python3 curl"
  [fresh]="debootstrap git curl"
)

wanted=()
for tier in "${@:-build}"; do
  [[ -n "${PKGS[$tier]+x}" ]] || { echo "install-deps: unknown tier '$tier' (build, test, vm, bench, fresh)" >&2; exit 2; }
  for p in ${PKGS[$tier]}; do wanted+=("$p"); done
done

# The Kubernetes manifest test validates with kubernetes-models from the npm registry: Debian's
# nodejs and npm, unless the machine already has a node and npm of its own.
if [[ " $* " == *" test "* ]] && ! { command -v node && command -v npm; } >/dev/null; then
  wanted+=(nodejs npm)
fi

missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[[ ${#missing[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing Debian packages: ${missing[*]}" >&2
  echo "install-deps: run as root, or: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi
log=${TMPDIR:-/tmp}/rdmahd-apt.log
echo "install-deps: installing ${#missing[@]} Debian packages for '$*' with apt-get (a few minutes on a" \
     "fresh machine; apt's output goes to $log): ${missing[*]}" >&2
start=$SECONDS
export DEBIAN_FRONTEND=noninteractive
# The package lists may be absent or stale on a fresh machine: refresh once, then install.
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
  echo "install-deps: the package lists are missing or stale: apt-get update (log: $log)" >&2
  apt-get update -qq >>"$log" 2>&1 || { tail -20 "$log" >&2; exit 1; }
  echo "install-deps: apt-get install, again (log: $log)" >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
    tail -20 "$log" >&2; exit 1; }
fi
echo "install-deps: installed in $((SECONDS - start)) s" >&2
# Debian starts services its packages ship (node_exporter, prometheus) where systemd runs; the
# project's tests start their own instances on chosen ports, so stop those.
for svc in prometheus prometheus-node-exporter; do
  if [[ " ${missing[*]} " == *" $svc "* ]] && command -v systemctl >/dev/null && [[ -d /run/systemd/system ]]; then
    systemctl disable --now "$svc" >/dev/null 2>&1 || true
  fi
done
