# shellcheck shell=bash
# Sourced by scripts/softroce.sh: fetches Debian's stock kernel package into
# the cache, extracts a PVH-bootable vmlinux and the modules rxe needs, and
# builds the guest's initramfs. Nothing is installed on the host.
#
# Cache layout (SR_CACHE = ${TIDE_CACHE:-$XDG_CACHE_HOME/tide}/softroce):
#   kernel-<ver>/boot            vmlinux (ELF, PVH entry) or vmlinuz fallback
#   kernel-<ver>/modules/*.ko    the modules below and their dependencies
#   kernel-<ver>/modules.load    load order (dependencies first)
#   kernel-<ver>/initramfs-<h>.cpio  h = hash of init script, modules, busybox

# Modules the guest needs; their dependencies are added from modules.dep.
# rdma_rxe asks the crypto API for "crc32" at device creation, which needs
# crc32_generic loaded (the guest has no modprobe to load it on demand).
SR_MODULES=(virtio_pci virtio_console 9pnet_virtio 9p crc32_generic rdma_rxe ib_uverbs rdma_ucm dummy veth bridge sch_htb)

# Echoes the kernel package to use: $TIDE_SOFTROCE_KERNEL_PKG, else the one
# Debian's linux-image-amd64 depends on, else the newest one in the cache.
srKernelPackage() {
  local pkg=${TIDE_SOFTROCE_KERNEL_PKG:-}
  if [ -z "$pkg" ] && command -v apt-cache >/dev/null; then
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    if [ -z "$pkg" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
      # A fresh machine may have no package lists yet.
      apt-get update -qq >/dev/null 2>&1
      pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
    fi
  fi
  if [ -z "$pkg" ]; then
    local ready
    ready=$(find "$SR_CACHE" -maxdepth 2 -path '*/kernel-*/ready' 2>/dev/null | sort -V | tail -n1)
    [ -n "$ready" ] && pkg=linux-image-$(basename "$(dirname "$ready")" | sed 's/^kernel-//')
  fi
  [ -n "$pkg" ] || return 1
  echo "$pkg"
}

# Extracts the ELF vmlinux from a bzImage whose payload is xz, gzip or zstd
# compressed. Booting it directly (PVH) skips the real-mode setup and the
# in-guest decompression, which is slow under TCG.
srExtractVmlinux() {
  local bz=$1 out=$2 magic tool off
  for magic in 'xz:\xfd7zXZ\x00' 'gzip:\x1f\x8b\x08' 'zstd:\x28\xb5\x2f\xfd'; do
    tool=${magic%%:*}
    command -v "$tool" >/dev/null || continue
    while read -r off; do
      case $tool in
        xz) tail -c +"$((off + 1))" "$bz" | xz -dc --single-stream >"$out" 2>/dev/null ;;
        gzip) tail -c +"$((off + 1))" "$bz" | gzip -dc >"$out" 2>/dev/null ;;
        zstd) tail -c +"$((off + 1))" "$bz" | zstd -dcq >"$out" 2>/dev/null ;;
      esac
      if [ "$(head -c 4 "$out" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] &&
        readelf -n "$out" 2>/dev/null | grep -q 'note type: (0x00000012)'; then
        return 0
      fi
    done < <(LC_ALL=C grep -obUaP "${magic#*:}" "$bz" 2>/dev/null | cut -d: -f1 | head -n 5)
  done
  rm -f "$out"
  return 1
}

# Fetches and unpacks kernel package $1 into $SR_CACHE/kernel-<ver> unless it
# is already there. Runs under the cache lock.
srPrepareKernel() {
  local pkg=$1 kdir tmp rc
  kdir=$SR_CACHE/kernel-${pkg#linux-image-}
  # `ready` holds the module list it was built for; a new list rebuilds.
  [ "$(cat "$kdir/ready" 2>/dev/null)" = "${SR_MODULES[*]}" ] && return 0
  command -v apt-get >/dev/null || { srSetupError kernel "apt-get not found; cannot fetch $pkg"; return 1; }
  tmp=$(mktemp -d "$SR_CACHE/fetch.XXXXXX") || { srSetupError kernel "cannot create a directory in $SR_CACHE"; return 1; }
  srFetchKernel "$pkg" "$kdir" "$tmp"
  rc=$?
  rm -rf "$tmp"
  return $rc
}

srFetchKernel() {
  local pkg=$1 ver=${1#linux-image-} kdir=$2 tmp=$3 deb mods m line
  echo "softroce: fetching $pkg (once; cached in $kdir)" >&2
  if ! (cd "$tmp" && apt-get download -qq "$pkg" >"$tmp/apt.log" 2>&1); then
    srSetupError kernel "apt-get download $pkg failed: $(grep -m1 -E '^E:' "$tmp/apt.log" || tail -n1 "$tmp/apt.log")"
    return 1
  fi
  deb=$(find "$tmp" -maxdepth 1 -name '*.deb' | head -n1)
  dpkg-deb -x "$deb" "$tmp/x" || { srSetupError kernel "dpkg-deb -x $deb failed"; return 1; }
  rm -f "$deb"
  [ -d "$tmp/x/lib/modules/$ver" ] || { srSetupError kernel "$pkg has no lib/modules/$ver"; return 1; }
  depmod -b "$tmp/x" "$ver" || { srSetupError kernel "depmod failed for $ver"; return 1; }

  mkdir -p "$tmp/k/modules"
  mods=$tmp/k/modules.load
  : >"$mods"
  for m in "${SR_MODULES[@]}"; do
    # --show-depends prints insmod lines, dependencies first; builtins say so.
    if ! modprobe -d "$tmp/x" -S "$ver" --show-depends "$m" >"$tmp/deps" 2>"$tmp/deps.err"; then
      srSetupError kernel "module $m not found in $pkg: $(head -n1 "$tmp/deps.err")"
      return 1
    fi
    while read -r line; do
      case $line in
        insmod\ *) ;;
        *) continue ;;
      esac
      local path=${line#insmod } name
      path=${path%% *}
      name=$(basename "$path")
      name=${name%.xz}
      name=${name%.zst}
      name=${name%.gz}
      grep -q "^$name\b" "$mods" && continue
      case $path in
        *.xz) xz -dc "$path" >"$tmp/k/modules/$name" ;;
        *.zst) zstd -dcq "$path" >"$tmp/k/modules/$name" ;;
        *.gz) gzip -dc "$path" >"$tmp/k/modules/$name" ;;
        *) cp "$path" "$tmp/k/modules/$name" ;;
      esac || { srSetupError kernel "cannot unpack module $path"; return 1; }
      # dummy would otherwise create dummy0 itself, which the job creates.
      if [ "$name" = dummy.ko ]; then echo "$name numdummies=0"; else echo "$name"; fi >>"$mods"
    done <"$tmp/deps"
  done

  local vmlinuz
  vmlinuz=$(find "$tmp/x/boot" -name 'vmlinuz-*' | head -n1)
  [ -n "$vmlinuz" ] || { srSetupError kernel "$pkg has no /boot/vmlinuz-*"; return 1; }
  if srExtractVmlinux "$vmlinuz" "$tmp/k/boot"; then
    echo pvh >"$tmp/k/boot-kind"
  else
    echo "softroce: could not extract vmlinux; booting the bzImage (slower)" >&2
    cp "$vmlinuz" "$tmp/k/boot"
    echo bzimage >"$tmp/k/boot-kind"
  fi
  echo "$pkg" >"$tmp/k/package"
  echo "${SR_MODULES[*]}" >"$tmp/k/ready"
  rm -rf "$kdir"
  mv "$tmp/k" "$kdir" || { srSetupError kernel "cannot move the kernel into $kdir"; return 1; }
}

# Echoes the path of the initramfs for kernel dir $1, building it if needed.
srInitramfs() {
  local kdir=$1 bb key out tmp ko
  bb=${TIDE_SOFTROCE_BUSYBOX:-$(command -v busybox || echo /bin/busybox)}
  [ -x "$bb" ] || { srSetupError initramfs "busybox not found (install busybox-static)"; return 1; }
  if readelf -l "$bb" 2>/dev/null | grep -q 'INTERP'; then
    srSetupError initramfs "$bb is dynamically linked; install busybox-static"
    return 1
  fi
  key=$(cat "$SR_DIR/guest-init.sh" "$kdir/modules.load" "$bb" | sha256sum | cut -c1-16)
  out=$kdir/initramfs-$key.cpio
  if [ ! -f "$out" ]; then
    tmp=$(mktemp -d "$SR_CACHE/initramfs.XXXXXX") || return 1
    mkdir -p "$tmp/r/bin" "$tmp/r/lib/modules"
    cp "$bb" "$tmp/r/bin/busybox"
    cp "$SR_DIR/guest-init.sh" "$tmp/r/init"
    chmod 755 "$tmp/r/init" "$tmp/r/bin/busybox"
    cp "$kdir/modules.load" "$tmp/r/modules.load"
    while read -r ko _; do cp "$kdir/modules/$ko" "$tmp/r/lib/modules/"; done <"$kdir/modules.load"
    # Uncompressed: unpacking a compressed initramfs costs more under TCG
    # than reading the few extra megabytes.
    if ! (cd "$tmp/r" && find . -print0 | cpio --null -o -H newc --quiet >"$tmp/initramfs.cpio"); then
      rm -rf "$tmp"
      srSetupError initramfs "cpio failed"
      return 1
    fi
    rm -f "$kdir"/initramfs-*.cpio
    mv "$tmp/initramfs.cpio" "$out"
    rm -rf "$tmp"
  fi
  echo "$out"
}
