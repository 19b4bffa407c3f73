#!/usr/bin/env bash
# Proves README's first command on a fresh Debian 12: a minbase bookworm made with debootstrap from
# the mirror this machine's apt uses, a clone of this checkout's HEAD inside it, then
#   scripts/run-daemon.sh --web.listen-address=127.0.0.1:PORT
# run as root in that chroot until /metrics answers, and `rdma-healthd check` run there too.
# The machine running this has no RDMA (or the chroot hides it: a fresh sysfs of this kernel), so
# what is asserted is what README promises for a node without RDMA: the daemon serves host checks,
# says that no RDMA device was found, and `check` exits 1 naming the modules that are not loaded.
#
# Needs root (debootstrap, chroot, mounts) and the Debian archive. Writes only into a temporary
# folder of its own (the chroot) and its cache folder, where the base system is kept as a tarball
# between runs (RDMAHD_FRESH_CACHE, default ${XDG_CACHE_HOME:-~/.cache}/rdma-healthd/fresh; about
# 45 MB). Everything it mounted is unmounted, and the daemon it started is ended by its PID, on any
# exit. Usage: tests/fresh/fresh-machine-test.sh [--keep]   (--keep leaves the chroot for a look)
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
keep=0
[[ ${1:-} == --keep ]] && keep=1

say() { printf 'fresh-machine: %s\n' "$*" >&2; }
die() { say "FAILED: $*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot and mounts)"
command -v debootstrap >/dev/null || die "debootstrap is missing (scripts/install-deps.sh fresh)"
git -C "$src" rev-parse --verify -q HEAD >/dev/null || die "$src is not a git checkout"

# The mirror apt already uses: the first http(s) Debian archive URI in its sources.
mirror=$(shopt -s nullglob
         cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null |
           grep -v '^[[:space:]]*#' | grep -oE 'https?://[^ ]*/debian/?( |$)' | head -1 | tr -d ' ' || true)
[[ -n $mirror ]] || die "no Debian archive found in /etc/apt/sources.list{,.d}"
mirror=${mirror%/}

cache=${RDMAHD_FRESH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rdma-healthd/fresh}
mkdir -p "$cache"
tarball=$cache/bookworm-minbase-$(dpkg --print-architecture).tgz

work=$(mktemp -d "${TMPDIR:-/var/tmp}/rdmahd-fresh.XXXXXX")
root=$work/root
daemon_pid=
mounts=()
cleanup() {
  local rc=$?
  if [[ -n $daemon_pid ]] && kill -0 "$daemon_pid" 2>/dev/null; then
    kill -TERM -- "-$daemon_pid" 2>/dev/null || kill -TERM "$daemon_pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$daemon_pid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "-$daemon_pid" 2>/dev/null || true
  fi
  local i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do umount -R "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || true; done
  if ((keep)); then
    say "kept $work"
  elif ! findmnt -rn -o TARGET | grep -q "^$work"; then
    # --one-file-system: never reach through a mount that is somehow still there.
    rm -rf --one-file-system "$work"
  else
    say "left $work: something is still mounted under it"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

t0=$SECONDS
if [[ ! -s $tarball ]]; then
  say "no cached base system: debootstrap --make-tarball from $mirror (about a minute)"
  debootstrap --variant=minbase --make-tarball="$tarball.part" bookworm "$work/mk" "$mirror" \
    >"$work/debootstrap-mk.log" 2>&1 || { tail -20 "$work/debootstrap-mk.log" >&2; die "debootstrap --make-tarball"; }
  mv "$tarball.part" "$tarball"
fi
say "unpacking a minbase bookworm into $root"
debootstrap --variant=minbase --unpack-tarball="$tarball" bookworm "$root" "$mirror" \
  >"$work/debootstrap.log" 2>&1 || { tail -20 "$work/debootstrap.log" >&2; die "debootstrap"; }
say "base system in $((SECONDS - t0)) s"

# What a new machine has that a chroot lacks: name resolution, apt's settings for this mirror (the
# sandbox's archive snapshot needs Check-Valid-Until off), no service starts from maintainer
# scripts (a chroot has no init to start them under).
cp /etc/resolv.conf "$root/etc/resolv.conf"
for f in /etc/apt/apt.conf.d/*; do
  grep -q '^Acquire::' "$f" 2>/dev/null && cp "$f" "$root/etc/apt/apt.conf.d/"
done
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"

mount -t proc proc "$root/proc" && mounts+=("$root/proc")
mount -t sysfs -o ro sysfs "$root/sys" 2>/dev/null || mount --rbind -o ro /sys "$root/sys"
mounts+=("$root/sys")
mount --bind /dev "$root/dev" && mounts+=("$root/dev")

# The checkout as a new user gets it: a clone of the committed HEAD (uncommitted changes are not in
# it), without this machine's build folders.
git clone -q --no-hardlinks "$src" "$root/root/rdma-healthd"
say "cloned $(git -C "$src" rev-parse --short HEAD) into /root/rdma-healthd"

port=$(( 20000 + RANDOM % 20000 ))
say "running README's first command: scripts/run-daemon.sh --web.listen-address=127.0.0.1:$port"
# setsid: the daemon and everything run-daemon.sh starts are one process group, ended as one.
setsid chroot "$root" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  /bin/bash -c "cd /root/rdma-healthd && exec scripts/run-daemon.sh --web.listen-address=127.0.0.1:$port" \
  >"$work/run-daemon.log" 2>&1 </dev/null &
daemon_pid=$!

deadline=$((SECONDS + ${RDMAHD_FRESH_TIMEOUT:-2400}))
until curl -fsS -o "$work/metrics" "http://127.0.0.1:$port/metrics" 2>/dev/null; do
  if ! kill -0 "$daemon_pid" 2>/dev/null; then
    tail -40 "$work/run-daemon.log" >&2; die "scripts/run-daemon.sh exited before /metrics answered"
  fi
  ((SECONDS < deadline)) || { tail -40 "$work/run-daemon.log" >&2; die "/metrics did not answer in time"; }
  sleep 2
done
say "/metrics answered $((SECONDS - t0)) s after the start"
grep -E '^install-deps:' "$work/run-daemon.log" >&2 || true

fail=0
expect() {  # expect DESCRIPTION COMMAND...: run the check, report it
  if "${@:2}"; then say "ok: $1"; else say "FAIL: $1"; fail=1; fi
}
expect "/metrics says the RDMA class is absent" grep -qx 'rdma_healthd_sysfs_rdma_class_present 0' "$work/metrics"
expect "/metrics has host-readiness series (rdma_host_*)" grep -q '^rdma_host_' "$work/metrics"
expect "every collector succeeded" \
  bash -c "! grep -E '^rdma_healthd_collector_success\\{' '$work/metrics' | grep -qv ' 1\$'"
expect "the log says no RDMA device was found" grep -qi 'no RDMA device' "$work/run-daemon.log"
# A newcomer reads the first lines: the no-device line must come before any verdict error.
first_error=$(grep -n 'level=error' "$work/run-daemon.log" | head -1 | cut -d: -f1)
no_device=$(grep -ni 'no RDMA device' "$work/run-daemon.log" | head -1 | cut -d: -f1)
expect "the no-device line comes before the first error line" \
  test -n "$no_device" -a \( -z "$first_error" -o "${no_device:-0}" -lt "${first_error:-1}" \)
expect "/-/healthy answers 200" curl -fsS -o /dev/null "http://127.0.0.1:$port/-/healthy"

set +e
chroot "$root" /root/rdma-healthd/build/rdma-healthd check >"$work/check.out" 2>"$work/check.err"
check_rc=$?
set -e
say "rdma-healthd check exited $check_rc:"
sed 's/^/  /' "$work/check.out" | tail -15 >&2
expect "check exits 1 on a node without RDMA (README: kernel_modules fails)" test "$check_rc" -eq 1
expect "check says it cannot judge the node's RDMA devices" grep -q '^cannot judge this node: ' "$work/check.out"
expect "check names the RDMA core module as not loaded" grep -qE '^kernel_modules +ib_core +failed' "$work/check.out"
expect "check prints a summary line" grep -qE '^[0-9]+ ok, [0-9]+ warning, [0-9]+ failed, [0-9]+ unknown' "$work/check.out"

((fail == 0)) || { say "run-daemon.log: $work/run-daemon.log"; keep=1; exit 1; }
say "passed in $((SECONDS - t0)) s"
