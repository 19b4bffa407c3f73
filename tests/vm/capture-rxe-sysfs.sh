#!/usr/bin/env bash
# capture-rxe-sysfs.sh: runs inside the single-VM topology (via regenerate-rxe-fixture.sh) and copies
# the sysfs the kernel wrote for rxe0 and its netdev into $RDMAHD_VM_OUT/rxe/sys, laid out as a
# --path.sysfs root:
#   class/infiniband/rxe0 -> ../../devices/virtual/infiniband/rxe0   (symlink, as in sysfs)
#   devices/virtual/infiniband/rxe0/{fw_ver,node_guid,...,ports/1/...}
#   class/net/veth0 -> ../../devices/virtual/net/veth0
#   devices/virtual/net/veth0/{mtu,operstate,speed,...,statistics/*}
# Files that fail to read (write-only, EINVAL for unused GID entries) are skipped; of the 1024 GID
# and 64 P_Key entries only the used ones and the first few unused ones are kept; power/, queues/,
# uevent and the subsystem links are left out. Uses bash builtins to read (an exec costs ~0.2 s
# under TCG).
# shellcheck source=tests/vm/guest-lib.sh
source "$RDMAHD_VM_LIB"
readonly KEEP_UNUSED=3
root="$RDMAHD_VM_OUT/rxe/sys"
netdev="$RDMAHD_VM_NETDEV"
skipped=0

# copy_file SRC DST: copies one sysfs attribute if it can be read; returns 1 when it cannot.
copy_file() {
  local content=""
  # read returns 1 at end of file; an open or read error leaves nothing (and says so on stderr).
  { IFS= read -r -d '' content <"$1"; } 2>/dev/null
  if [[ -z "$content" ]]; then
    skipped=$((skipped + 1))
    return 1
  fi
  printf '%s' "$content" >"$2"
}

# copy_dir SRC DST: regular files and subdirectories, recursively; no symlinks.
copy_dir() {
  local src="$1" dst="$2" entry name
  mkdir -p "$dst"
  for entry in "$src"/*; do
    name="${entry##*/}"
    [[ -L "$entry" ]] && continue
    case "$name" in power | queues | uevent) continue ;; esac
    if [[ -d "$entry" ]]; then
      case "$name" in
        gids) copy_gid_table "${entry%/gids}" "$dst" ;;
        gid_attrs) ;;  # with gids
        pkeys) copy_table "$entry" "$dst/pkeys" 0x0000 >/dev/null ;;
        *) copy_dir "$entry" "$dst/$name" ;;
      esac
    elif [[ -f "$entry" ]]; then
      copy_file "$entry" "$dst/$name" || true
    fi
  done
}

# copy_table DIR DST UNUSED_VALUE: numbered entries; keeps used ones and the first KEEP_UNUSED unused.
# Prints the kept indices.
copy_table() {
  local src="$1" dst="$2" unused="$3" i content="" unused_kept=0 kept=()
  mkdir -p "$dst"
  for ((i = 0; ; i++)); do
    [[ -e "$src/$i" ]] || break
    content=""
    { IFS= read -r -d '' content <"$src/$i"; } 2>/dev/null
    [[ -n "$content" ]] || continue
    if [[ "${content%$'\n'}" == "$unused" ]]; then
      ((unused_kept < KEEP_UNUSED)) || continue
      unused_kept=$((unused_kept + 1))
    fi
    printf '%s' "$content" >"$dst/$i"
    kept+=("$i")
  done
  echo "${kept[@]}"
}

# copy_gid_table PORT_DIR DST_PORT_DIR: gids/ as copy_table, gid_attrs/{types,ndevs}/ for the kept
# indices that can be read (unused entries answer EINVAL).
copy_gid_table() {
  local port="$1" dst="$2" i attr
  local kept
  read -r -a kept <<<"$(copy_table "$port/gids" "$dst/gids" 0000:0000:0000:0000:0000:0000:0000:0000)"
  for attr in types ndevs; do
    mkdir -p "$dst/gid_attrs/$attr"
    for i in "${kept[@]}"; do
      copy_file "$port/gid_attrs/$attr/$i" "$dst/gid_attrs/$attr/$i" || true
    done
  done
}

# capture CLASS NAME: class/CLASS/NAME as a symlink to the device folder, as sysfs has it.
capture() {
  local class="$1" name="$2" link target
  link="$(readlink "/sys/class/$class/$name")" || fail "/sys/class/$class/$name is not a symlink"
  target="$(readlink -f "/sys/class/$class/$name")"
  [[ "$target" == /sys/devices/* ]] || fail "unexpected target $target"
  copy_dir "$target" "$root${target#/sys}"
  mkdir -p "$root/class/$class"
  ln -s "$link" "$root/class/$class/$name"
  ok "captured /sys/class/$class/$name -> $link"
}

# Non-zero counters make a better fixture: a little traffic first.
typical="$(rxe_self_traffic 50)" || exit 1
ok "50 ib_send_lat ping-pongs first (t_typical $typical us)"
rm -rf "$RDMAHD_VM_OUT/rxe"
capture infiniband rxe0
capture net "$netdev"
uname -r >"$RDMAHD_VM_OUT/rxe/kernel-release"
ok "$(find "$RDMAHD_VM_OUT/rxe" -type f | wc -l) files captured, $skipped unreadable skipped"
