#!/usr/bin/env bash
# vm-prepare.sh: makes sure everything a Soft-RoCE VM run needs is on this machine, then prints
# where it is as shell assignments (RDMAHD_VM_KERNEL=..., RDMAHD_VM_INITRD=..., RDMAHD_VM_KVER=...).
#
#   - the host tools (qemu, busybox-static, rdma-core, perftest, ...), installed from Debian when
#     missing: the guest runs the host's own binaries over a read-only 9p share of /, so the tools
#     a scenario uses must be installed on the host;
#   - the Debian kernel package linux-image-amd64 depends on (it ships rdma_rxe), downloaded into
#     the cache (never into the repo), extracted and depmod'ed;
#   - a small busybox initramfs holding tests/vm/initramfs-init.sh and the modules it loads, cached
#     under a key made of the kernel version and a hash of everything that goes into it.
#
# Exit codes: 0 ready; 77 cannot be had here (one-line reason on stderr); 1 cannot be had although
# RDMAHD_REQUIRE_VM=1 says it must (CI), or an unexpected error.
#
# Environment:
#   RDMAHD_VM_CACHE       cache folder (default ${XDG_CACHE_HOME:-$HOME/.cache}/rdma-healthd)
#   RDMAHD_VM_KERNEL_PKG  kernel package to use instead of what linux-image-amd64 depends on
#   RDMAHD_VM_REFRESH=1   ask apt again which kernel linux-image-amd64 depends on
#   RDMAHD_REQUIRE_VM=1   turn "cannot be had" into a failure
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${RDMAHD_VM_CACHE:-${XDG_CACHE_HOME:-${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}/.cache}/rdma-healthd}"

log() { echo "vm-prepare: $*" >&2; }
# apt's own chatter goes to a log in the cache, so that a skip is one line.
apt_log() { echo "$cache/apt.log"; }

# "Cannot be had": a skip for users, a failure where the VM tier is required.
unavailable() {
  if [[ "${RDMAHD_REQUIRE_VM:-0}" == 1 ]]; then
    echo "vm-prepare: FAIL (RDMAHD_REQUIRE_VM=1): $*" >&2
    exit 1
  fi
  echo "SKIP: Soft-RoCE VM unavailable: $*" >&2
  exit 77
}

# Modules the initramfs loads, in this order (see initramfs-init.sh). crc32_generic first: without
# it `rdma link add` fails with "rdma_rxe: failed to add ...: No such file or directory".
# sch_netem is only shipped, not loaded at boot: the netem-loss scenario loads it.
readonly MODULES=(crc32_generic virtio_pci 9pnet_virtio 9p overlay rdma_rxe rdma_ucm veth virtio_net sch_netem)

# Debian package -> a file that proves it is installed and usable.
readonly -A HOST_PACKAGES=(
  [qemu-system-x86]=/usr/bin/qemu-system-x86_64
  [busybox-static]=/bin/busybox
  [cpio]=/usr/bin/cpio
  [kmod]=/usr/sbin/depmod
  [rdma-core]=/usr/share/doc/rdma-core
  [ibverbs-utils]=/usr/bin/ibv_devinfo
  [ibverbs-providers]=/usr/share/doc/ibverbs-providers
  [rdmacm-utils]=/usr/bin/rping
  [perftest]=/usr/bin/ib_send_lat
  [iproute2]=/usr/bin/rdma
  [curl]=/usr/bin/curl
  [jq]=/usr/bin/jq
  [gzip]=/usr/bin/gzip
  [xz-utils]=/usr/bin/xz
)

package_installed() {
  [[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" == "install ok installed" ]] && [[ -e "$2" ]]
}

ensure_host_packages() {
  local missing=() pkg
  for pkg in "${!HOST_PACKAGES[@]}"; do
    package_installed "$pkg" "${HOST_PACKAGES[$pkg]}" || missing+=("$pkg")
  done
  ((${#missing[@]} == 0)) && return 0
  command -v apt-get >/dev/null || unavailable "missing ${missing[*]} and no apt-get to install them"
  [[ "$(id -u)" == 0 ]] || unavailable "missing ${missing[*]} (install them, or run as root)"
  log "installing ${missing[*]}"
  local apt=(timeout 600 env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends)
  if ! "${apt[@]}" "${missing[@]}" >>"$(apt_log)" 2>&1; then
    timeout 300 apt-get update -q >>"$(apt_log)" 2>&1 || true
    "${apt[@]}" "${missing[@]}" >>"$(apt_log)" 2>&1 ||
      unavailable "apt-get install ${missing[*]} failed (see $(apt_log))"
  fi
  for pkg in "${missing[@]}"; do
    package_installed "$pkg" "${HOST_PACKAGES[$pkg]}" || unavailable "$pkg did not install"
  done
}

# Prints the kernel package name (linux-image-<version>), asking apt when needed.
resolve_kernel_package() {
  if [[ -n "${RDMAHD_VM_KERNEL_PKG:-}" ]]; then
    echo "$RDMAHD_VM_KERNEL_PKG"
    return
  fi
  if [[ "${RDMAHD_VM_REFRESH:-0}" != 1 && -s "$cache/kernel-package" ]]; then
    cat "$cache/kernel-package"
    return
  fi
  depends_on() {
    apt-cache depends linux-image-amd64 2>/dev/null |
      awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
  }
  local pkg
  pkg="$(depends_on)"
  if [[ -z "$pkg" ]]; then
    timeout 300 apt-get update -q >>"$(apt_log)" 2>&1 || true
    pkg="$(depends_on)"
  fi
  [[ -n "$pkg" ]] || unavailable "apt cannot tell which kernel linux-image-amd64 depends on"
  echo "$pkg" >"$cache/kernel-package"
  echo "$pkg"
}

# Downloads (once) and extracts the kernel package; prints the extracted folder.
fetch_kernel() {
  local pkg="$1" kver="${1#linux-image-}"
  local deb_dir="$cache/debs" tree="$cache/kernel/$kver"
  mkdir -p "$deb_dir"
  local deb
  deb="$(find "$deb_dir" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n1)"
  if [[ -z "$deb" ]]; then
    log "downloading $pkg into $deb_dir"
    (cd "$deb_dir" && timeout 600 apt-get download -q "$pkg" >>"$(apt_log)" 2>&1) ||
      { timeout 300 apt-get update -q >>"$(apt_log)" 2>&1 || true
        (cd "$deb_dir" && timeout 600 apt-get download -q "$pkg" >>"$(apt_log)" 2>&1); } ||
      unavailable "apt-get download $pkg failed (see $(apt_log))"
    deb="$(find "$deb_dir" -maxdepth 1 -name "${pkg}_*.deb" | sort | tail -n1)"
    [[ -n "$deb" ]] || unavailable "apt-get download $pkg left no .deb"
  fi
  if [[ ! -s "$tree/boot/vmlinuz-$kver" || ! -s "$tree/lib/modules/$kver/modules.dep" ]]; then
    log "extracting $(basename "$deb")"
    rm -rf "$tree.partial" && mkdir -p "$tree.partial"
    dpkg-deb -x "$deb" "$tree.partial"
    # The .deb ships no modules.dep: its postinst would run depmod.
    depmod -b "$tree.partial" "$kver"
    rm -rf "$tree" && mv "$tree.partial" "$tree"
  fi
  echo "$tree"
}

# Prints the kernel image QEMU boots: the uncompressed vmlinux (an ELF with a PVH entry point, so
# QEMU jumps straight into it) when it can be extracted, else the bzImage. Decompressing the
# bzImage under TCG costs ~6 s per boot.
kernel_image() {
  local tree="$1" kver="$2"
  local vmlinuz="$tree/boot/vmlinuz-$kver" vmlinux="$tree/boot/vmlinux-$kver"
  if [[ ! -s "$vmlinux" ]] && grep -q '^CONFIG_PVH=y' "$tree/boot/config-$kver" 2>/dev/null; then
    local offset
    for offset in $(LC_ALL=C grep -obUa $'\xfd7zXZ' "$vmlinuz" | cut -d: -f1); do
      tail -c +"$((offset + 1))" "$vmlinuz" | xz -dc --single-stream >"$vmlinux.partial" 2>/dev/null
      if [[ "$(head -c 4 "$vmlinux.partial" 2>/dev/null)" == $'\x7fELF' ]]; then
        mv "$vmlinux.partial" "$vmlinux"
        break
      fi
    done
    rm -f "$vmlinux.partial"
  fi
  if [[ -s "$vmlinux" ]]; then echo "$vmlinux"; else echo "$vmlinuz"; fi
}

# Builds (once per key) the initramfs; prints its path.
build_initramfs() {
  local tree="$1" kver="$2"
  local key
  key="$(cat "$here/initramfs-init.sh" <(printf '%s\n' "${MODULES[@]}") /bin/busybox |
         sha256sum | cut -c1-16)"
  local out="$cache/initramfs/$kver-$key.cpio.gz"
  if [[ -s "$out" ]]; then
    echo "$out"
    return
  fi
  log "building initramfs for $kver ($key)"
  local stage
  stage="$(mktemp -d)"
  trap 'rm -rf "$stage"' RETURN
  mkdir -p "$stage"/{bin,sbin,dev,proc,sys,lib/modules/"$kver"}
  cp /bin/busybox "$stage/bin/busybox"
  ln -s busybox "$stage/bin/sh"
  cp "$here/initramfs-init.sh" "$stage/init"
  chmod 755 "$stage/init"
  # Only the modules we load and what they depend on (about 12 MB instead of 400).
  local m line ko rel
  for m in "${MODULES[@]}"; do
    modprobe -d "$tree" -S "$kver" --show-depends "$m" >"$stage/deps" ||
      { log "module $m not found in $kver"; exit 1; }
    while read -r line; do
      [[ "$line" == insmod\ * ]] || continue
      ko="$(awk '{print $2}' <<<"$line")"
      rel="${ko#"$tree"/lib/modules/"$kver"/}"
      mkdir -p "$stage/lib/modules/$kver/$(dirname "$rel")"
      cp -n "$ko" "$stage/lib/modules/$kver/$rel"
    done <"$stage/deps"
  done
  rm -f "$stage/deps"
  cp "$tree/lib/modules/$kver"/modules.{order,builtin,builtin.modinfo} "$stage/lib/modules/$kver/" 2>/dev/null || true
  depmod -b "$stage" "$kver"
  mkdir -p "$cache/initramfs"
  (cd "$stage" && find . -print0 | cpio --null -o -H newc --quiet | gzip -6) >"$out.partial"
  mv "$out.partial" "$out"
  echo "$out"
}

main() {
  [[ "$(uname -m)" == x86_64 ]] || unavailable "host is $(uname -m), the harness boots an x86_64 kernel"
  command -v dpkg-query >/dev/null || unavailable "not a Debian-like host (no dpkg-query)"
  mkdir -p "$cache" || unavailable "cannot create cache folder $cache"
  # One preparer at a time (ctest may start several VM tests).
  exec 9>"$cache/.lock"
  flock -w 900 9 || unavailable "timed out waiting for another vm-prepare ($cache/.lock)"

  ensure_host_packages
  local pkg kver tree initrd
  pkg="$(resolve_kernel_package)"
  kver="${pkg#linux-image-}"
  tree="$(fetch_kernel "$pkg")"
  initrd="$(build_initramfs "$tree" "$kver")"
  printf 'RDMAHD_VM_KVER=%q\nRDMAHD_VM_KERNEL=%q\nRDMAHD_VM_INITRD=%q\n' \
    "$kver" "$(kernel_image "$tree" "$kver")" "$initrd"
}

main "$@"
