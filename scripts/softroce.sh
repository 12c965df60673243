#!/usr/bin/env bash
# SoftRoCE (rdma_rxe) for tide: an rxe device on this host when its kernel
# has rdma_rxe, otherwise a small QEMU guest that has one. See docs/softroce.md.
#
#   softroce.sh up [--netdev NAME] [--addr CIDR] [--name rxe0]
#   softroce.sh down
#   softroce.sh run [options] -- COMMAND...
#   softroce.sh check
#
# Exit codes of `run`: the command's own code; 124 timeout; 125 the VM or
# the guest's setup failed (one line on stderr names the step); 2 bad usage.
set -uo pipefail

SR_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/softroce" && pwd)
SR_CACHE=${TIDE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tide}/softroce
SR_STATE=${TIDE_SOFTROCE_STATE:-/run/tide-softroce.state}
# shellcheck source=scripts/softroce/kernel.sh
. "$SR_DIR/kernel.sh"
# shellcheck source=scripts/softroce/guest.sh
. "$SR_DIR/guest.sh"

SR_RUN_DIRS=()
SR_QEMU_PIDS=()

usage() {
  cat <<'USAGE'
usage: softroce.sh up [--netdev NAME] [--addr CIDR] [--name RXE]
       softroce.sh down
       softroce.sh run [--timeout S] [--mem M] [--cpus N] [--devices 1|2]
                       [--mtu N] [--addr CIDR] [--addr2 CIDR] [--workdir DIR]
                       [--share DIR]... [--env NAME]... [--accel auto|kvm|tcg]
                       [--verbose] -- COMMAND...
       softroce.sh check
USAGE
}

die() { echo "softroce: $*" >&2; exit 1; }
usageError() { echo "softroce: $* (see softroce.sh --help)" >&2; exit 2; }
srSetupError() { echo "softroce: setup failed at $1: $2" >&2; }

cleanup() {
  local p d
  for p in "${SR_QEMU_PIDS[@]}"; do kill -TERM "$p" 2>/dev/null && wait "$p" 2>/dev/null; done
  for d in "${SR_RUN_DIRS[@]}"; do rm -rf "$d"; done
}
trap cleanup EXIT
trap 'echo "softroce: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM HUP

hasNativeRxe() {
  [ -d /sys/module/rdma_rxe ] || modinfo rdma_rxe >/dev/null 2>&1
}

# Devices in /sys/class/infiniband, as "name:kind" (kind rxe or hardware).
rdmaDevices() {
  local d
  for d in /sys/class/infiniband/*; do
    [ -e "$d" ] || continue
    if [ -e "$d/device" ]; then echo "$(basename "$d"):hardware"; else echo "$(basename "$d"):rxe"; fi
  done
}

cmdUp() {
  local netdev="" addr=192.0.2.1/24 name=rxe0 created=0
  while [ $# -gt 0 ]; do
    case $1 in
      --netdev) netdev=${2:?}; shift 2 ;;
      --addr) addr=${2:?}; shift 2 ;;
      --name) name=${2:?}; shift 2 ;;
      *) usageError "up: unknown option $1" ;;
    esac
  done
  [[ $addr =~ ^(192\.0\.2|198\.51\.100)\.[0-9]+/[0-9]+$ ]] ||
    usageError "address $addr: only documentation ranges 192.0.2.0/24 and 198.51.100.0/24 are allowed"
  [ "$(id -u)" -eq 0 ] || die "up needs root"
  if ! hasNativeRxe || ! modprobe rdma_rxe 2>/dev/null; then
    die "this kernel ($(uname -r)) has no rdma_rxe; use \`scripts/softroce.sh run -- <command>\` to run in a guest that has it"
  fi
  [ -e "/sys/class/infiniband/$name" ] && die "$name already exists"
  [ -e "$SR_STATE" ] && die "$SR_STATE exists: run \`softroce.sh down\` first"
  if [ -z "$netdev" ]; then
    netdev=tide-rxe0
    ip link add "$netdev" type dummy || die "cannot create dummy netdev $netdev"
    created=1
    ip addr add "$addr" dev "$netdev" || { ip link del "$netdev"; die "cannot add $addr to $netdev"; }
    ip link set "$netdev" up || { ip link del "$netdev"; die "cannot bring up $netdev"; }
  else
    ip link show "$netdev" >/dev/null 2>&1 || die "no netdev $netdev"
  fi
  if ! rdma link add "$name" type rxe netdev "$netdev"; then
    [ "$created" -eq 1 ] && ip link del "$netdev"
    die "rdma link add $name type rxe netdev $netdev failed"
  fi
  printf 'name=%s\nnetdev=%s\ncreated=%s\n' "$name" "$netdev" "$created" >"$SR_STATE"
  echo "softroce: $name on $netdev ($(ip -br -4 addr show "$netdev" | awk '{print $3}'))"
}

cmdDown() {
  [ $# -eq 0 ] || usageError "down takes no options"
  [ -f "$SR_STATE" ] || die "nothing to remove ($SR_STATE not found)"
  local name netdev created rc=0
  name=$(sed -n 's/^name=//p' "$SR_STATE")
  netdev=$(sed -n 's/^netdev=//p' "$SR_STATE")
  created=$(sed -n 's/^created=//p' "$SR_STATE")
  if [ -e "/sys/class/infiniband/$name" ]; then
    rdma link delete "$name" || { echo "softroce: cannot delete $name" >&2; rc=1; }
  fi
  if [ "$created" = 1 ] && ip link show "$netdev" >/dev/null 2>&1; then
    ip link del "$netdev" || { echo "softroce: cannot delete $netdev" >&2; rc=1; }
  fi
  [ $rc -eq 0 ] && rm -f "$SR_STATE" && echo "softroce: removed $name${created/1/ and $netdev}"
  return $rc
}

# Prints "mode: <native-rxe|hardware|guest|impossible>" and why.
cmdCheck() {
  local devs kinds pkg
  devs=$(rdmaDevices | tr '\n' ' ')
  if [ -n "$devs" ]; then
    kinds=$(rdmaDevices | cut -d: -f2 | sort -u | tr '\n' ' ')
    if [[ $kinds == *hardware* ]]; then echo "mode: hardware"; else echo "mode: native-rxe"; fi
    echo "why: RDMA devices present: $devs"
    return 0
  fi
  if hasNativeRxe; then
    echo "mode: native-rxe"
    echo "why: kernel $(uname -r) has rdma_rxe but no device yet: run \`scripts/softroce.sh up\`"
    return 0
  fi
  if ! command -v qemu-system-x86_64 >/dev/null; then
    echo "mode: impossible"
    echo "why: kernel $(uname -r) lacks rdma_rxe and qemu-system-x86_64 is not installed (scripts/install-deps.sh)"
    return 0
  fi
  pkg=$(srKernelPackage)
  if [ -z "$pkg" ]; then
    echo "mode: impossible"
    echo "why: kernel $(uname -r) lacks rdma_rxe and no Debian kernel package is known (apt-cache depends linux-image-amd64)"
    return 0
  fi
  if [ ! -f "$SR_CACHE/kernel-${pkg#linux-image-}/ready" ] && ! command -v apt-get >/dev/null; then
    echo "mode: impossible"
    echo "why: kernel $(uname -r) lacks rdma_rxe and $pkg is neither cached nor fetchable (no apt-get)"
    return 0
  fi
  local accel="tcg (no /dev/kvm)"
  if [ -e /dev/kvm ]; then
    accel="kvm if a probe boot works, else tcg"
    SR_KDIR=$SR_CACHE/kernel-${pkg#linux-image-}
    local key
    key=$( (uname -r; qemu-system-x86_64 --version | head -n1; echo "$pkg") | sha256sum | cut -c1-16)
    [ -f "$SR_CACHE/kvm-probe-$key" ] && accel="$( [ "$(cat "$SR_CACHE/kvm-probe-$key")" = ok ] && echo "kvm (probe ok)" || echo "tcg (kvm probe failed)")"
  fi
  echo "mode: guest"
  echo "why: kernel $(uname -r) lacks rdma_rxe; QEMU guest with $pkg ($( [ -f "$SR_CACHE/kernel-${pkg#linux-image-}/ready" ] && echo cached || echo "fetched on first run")), accelerator $accel"
}

cmdRun() {
  local timeout=600 accel=auto verbose=0 workdir=""
  SR_MEM=2048M SR_CPUS=2 SR_DEVICES=1 SR_MTU=1500 SR_NETDEV=dummy0
  SR_ADDR="" SR_ADDR2="" SR_SHARES=() SR_EXTRA_ENV=()
  local -a extra=()
  while [ $# -gt 0 ]; do
    case $1 in
      --timeout) timeout=${2:?}; shift 2 ;;
      --mem) SR_MEM=${2:?}; shift 2 ;;
      --cpus) SR_CPUS=${2:?}; shift 2 ;;
      --devices) SR_DEVICES=${2:?}; shift 2 ;;
      --mtu) SR_MTU=${2:?}; shift 2 ;;
      --addr) SR_ADDR=${2:?}; shift 2 ;;
      --addr2) SR_ADDR2=${2:?}; shift 2 ;;
      --workdir) workdir=${2:?}; shift 2 ;;
      --share) extra+=("${2:?}"); shift 2 ;;
      --env) SR_EXTRA_ENV+=("${2:?}"); shift 2 ;;
      --accel) accel=${2:?}; shift 2 ;;
      --verbose | -v) verbose=1; shift ;;
      --) shift; break ;;
      *) usageError "run: unknown option $1 (the command goes after --)" ;;
    esac
  done
  [ $# -gt 0 ] || usageError "run: no command given (softroce.sh run [options] -- COMMAND...)"
  [[ $timeout =~ ^[1-9][0-9]*$ ]] || usageError "--timeout must be a positive number of seconds"
  [[ $SR_CPUS =~ ^[1-9][0-9]*$ ]] || usageError "--cpus must be a positive integer"
  [[ $SR_MEM =~ ^[0-9]+[MG]?$ ]] || usageError "--mem must look like 2048M or 2G"
  [[ $SR_MTU =~ ^[0-9]+$ ]] || usageError "--mtu must be a number"
  case $SR_DEVICES in
    1) SR_ADDR=${SR_ADDR:-192.0.2.1/24} ;;
    2) SR_ADDR=${SR_ADDR:-192.0.2.1/24} SR_ADDR2=${SR_ADDR2:-198.51.100.1/24} ;;
    *) usageError "--devices must be 1 or 2" ;;
  esac
  case $accel in auto | kvm | tcg) ;; *) usageError "--accel must be auto, kvm or tcg" ;; esac
  local a
  for a in "$SR_ADDR" "$SR_ADDR2"; do
    [ -z "$a" ] || [[ $a =~ ^(192\.0\.2|198\.51\.100)\.[0-9]+/[0-9]+$ ]] ||
      usageError "address $a: only documentation ranges 192.0.2.0/24 and 198.51.100.0/24 are allowed"
  done

  if [ -z "$workdir" ]; then
    workdir=$(git rev-parse --show-toplevel 2>/dev/null) || workdir=$PWD
  fi
  local d
  for d in "$workdir" "${extra[@]}"; do
    [ -d "$d" ] || usageError "no directory $d"
    d=$(cd "$d" && pwd -P)
    [[ $d == */* && $d != / && $d != *$'\n'* ]] || usageError "cannot share $d"
    SR_SHARES+=("$d")
  done

  command -v qemu-system-x86_64 >/dev/null || {
    srSetupError qemu "qemu-system-x86_64 not found (install qemu-system-x86: scripts/install-deps.sh)"
    exit 125
  }
  mkdir -p "$SR_CACHE" || { srSetupError cache "cannot create $SR_CACHE"; exit 125; }
  local pkg
  pkg=$(srKernelPackage) || {
    srSetupError kernel "no Debian kernel package known (apt-cache depends linux-image-amd64 names none; set TIDE_SOFTROCE_KERNEL_PKG)"
    exit 125
  }
  SR_KDIR=$SR_CACHE/kernel-${pkg#linux-image-}
  # One preparation at a time per cache; concurrent runs wait here.
  exec 9>"$SR_CACHE/.lock"
  flock 9 || { srSetupError cache "cannot lock $SR_CACHE/.lock"; exit 125; }
  srPrepareKernel "$pkg" || exit 125
  SR_INITRD=$(srInitramfs "$SR_KDIR") || exit 125
  srChooseAccel "$accel"
  exec 9>&-

  [ $verbose -eq 1 ] && echo "softroce: $pkg ($(cat "$SR_KDIR/boot-kind")), accel $SR_ACCEL ($SR_ACCEL_WHY), $SR_CPUS cpus, $SR_MEM, devices $SR_DEVICES, mtu $SR_MTU" >&2
  srRunGuest "$SR_ACCEL" "$timeout" "$@"
  local rc=$?
  if [ $verbose -eq 1 ]; then
    echo "softroce: guest steps (guest uptime): ${SR_GUEST_STEPS:-none}" >&2
    echo "softroce: command started ${SR_GUEST_READY:-?} s after guest kernel start; wall ${SR_WALL} s; exit $rc" >&2
  fi
  return $rc
}

case ${1:-} in
  up) shift; cmdUp "$@" ;;
  down) shift; cmdDown "$@" ;;
  run) shift; cmdRun "$@" ;;
  check) shift; cmdCheck "$@" ;;
  -h | --help | help) usage ;;
  *) usageError "unknown command ${1:-(none)}" ;;
esac
