#!/bin/busybox sh
# shellcheck shell=dash
# /init of the Soft-RoCE test VM (PID 1, busybox only).
#
# Loads the modules, mounts the host's / (9p tag "hostroot", read-only) under a tmpfs overlay so the
# guest runs the host's own binaries, mounts the per-run share (9p tag "vmshare", writable), then
# runs /vmshare/job.sh in that root. Whatever happens, it prints a marker line on the console and
# powers the VM off: the host never waits for a guest that has nothing left to do.
#
# Console markers (the host reads them when the share holds no status file):
#   RDMAHD-VM: <progress>
#   RDMAHD-VM-EXIT=<status>
/bin/busybox --install -s /bin
export PATH=/bin:/sbin

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev

say() { echo "RDMAHD-VM: [$(cut -d' ' -f1 /proc/uptime)] $*" >/dev/console; }

# rdmahd.init=systemd on the kernel command line (vm-run.sh --init=systemd): hand the new root to
# systemd as PID 1 and run the job as a service there, for scenarios that test the daemon under a
# real service manager. Read now: /proc moves into the new root below.
init_mode=job
case " $(cat /proc/cmdline) " in *" rdmahd.init=systemd "*) init_mode=systemd ;; esac

# The first line: the kernel reached userspace (in the console tail of a boot that got stuck later).
say "init started"

power_off() {
  sync
  echo o >"$1/sysrq-trigger"
  sleep 30
}

# Stops the VM with `status` (a setup failure: the job never ran).
die() {
  say "init failed: $*"
  echo "RDMAHD-VM-EXIT=${2:-3}" >/dev/console
  power_off /proc
}

# Same order as MODULES in vm-prepare.sh.
for m in crc32_generic virtio_pci 9pnet_virtio 9p overlay rdma_rxe rdma_ucm veth virtio_net; do
  modprobe "$m" || die "modprobe $m"
done

say "modules loaded"
mkdir -p /lower /rw /newroot
mount -t 9p -o trans=virtio,version=9p2000.L,ro,cache=loose,msize=512000 hostroot /lower ||
  die "mount hostroot"
mount -t tmpfs -o size=60% tmpfs /rw || die "mount tmpfs"
mkdir -p /rw/upper /rw/work
mount -t overlay overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work /newroot ||
  die "mount overlay"

# The host's /run (sockets, pid files) means nothing here.
mount -t tmpfs -o mode=755 tmpfs /newroot/run || die "mount /run"
mkdir -p /newroot/vmshare
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 vmshare /newroot/vmshare ||
  die "mount vmshare"

say "root mounted"
# The chroot sees this kernel's modules (modprobe works there too). A bind mount: copying them into
# the overlay costs seconds of 9p lookups under TCG. systemd's switch_root empties the initramfs,
# which would empty a bind mount of it too, so that mode copies them (from RAM to RAM).
kver="$(uname -r)"
mkdir -p "/newroot/lib/modules/$kver"
if [ "$init_mode" = systemd ]; then
  cp -a "/lib/modules/$kver/." "/newroot/lib/modules/$kver/" || die "copy modules"
else
  mount --bind "/lib/modules/$kver" "/newroot/lib/modules/$kver"
fi
for fs in proc sys dev; do
  mount --move "/$fs" "/newroot/$fs" || die "move /$fs"
done
mkdir -p /newroot/dev/pts /newroot/dev/shm
mount -t devpts devpts /newroot/dev/pts
mount -t tmpfs tmpfs /newroot/dev/shm

# /dev now lives in the new root. vm-run.sh's boot watchdog waits for the "running job" line.
console=/newroot/dev/console
if [ "$init_mode" = systemd ]; then
  # A target of its own: basic.target (journald, udev, tmpfiles, sysusers) and the job, nothing of
  # the host's default target. The job prints the "running job" line once systemd is up, then
  # reports its status and powers off like the plain mode.
  units=/newroot/etc/systemd/system
  mkdir -p "$units"
  # The host may be a container: its marker in the shared root would make systemd believe it runs
  # in one (no udev, no kernel command line) while it is PID 1 of a real VM.
  rm -f /newroot/.dockerenv
  # Likewise the container's policy-rc.d, which forbids maintainer scripts to start services.
  rm -f /newroot/usr/sbin/policy-rc.d
  # The root is the host's / under an overlay: tmpfiles would walk (and empty /tmp of) the whole
  # 9p-shared tree for minutes under TCG, and the rest has nothing to do in a test guest.
  for u in systemd-tmpfiles-setup.service systemd-tmpfiles-clean.timer systemd-timesyncd.service \
           systemd-pstore.service e2scrub_reap.service; do
    ln -sf /dev/null "$units/$u"
  done
  cat >"$units/rdmahd-vm.target" <<'UNIT'
[Unit]
Description=rdma-healthd VM test
Requires=basic.target rdmahd-vm-job.service
After=basic.target
AllowIsolate=yes
UNIT
  cat >"$units/rdmahd-vm-job.service" <<'UNIT'
[Unit]
Description=rdma-healthd VM test job
After=basic.target systemd-journald.service systemd-udev-settle.service
[Service]
Type=oneshot
StandardInput=null
StandardOutput=tty
StandardError=tty
TTYPath=/dev/console
Environment=PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 TERM=dumb
ExecStart=/bin/sh /rdmahd-vm-job.sh
TimeoutStartSec=infinity
UNIT
  cat >/newroot/rdmahd-vm-job.sh <<'JOB'
echo "RDMAHD-VM: [$(cut -d' ' -f1 /proc/uptime)] systemd up, running job"
/bin/bash /vmshare/job.sh
status=$?
echo "RDMAHD-VM-EXIT=$status"
umount /vmshare 2>/dev/null
sync
echo o >/proc/sysrq-trigger
sleep 30
JOB
  say "booted $kver, starting systemd"
  exec switch_root /newroot /lib/systemd/systemd
  die "switch_root to systemd failed"
fi
echo "RDMAHD-VM: [$(cut -d" " -f1 /newroot/proc/uptime)] booted $kver, running job" >"$console"
env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  TERM=dumb chroot /newroot /bin/bash /vmshare/job.sh </newroot/dev/null >"$console" 2>&1
status=$?
echo "RDMAHD-VM-EXIT=$status" >"$console"
umount /newroot/vmshare 2>/dev/null
power_off /newroot/proc
