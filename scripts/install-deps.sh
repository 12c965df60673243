#!/usr/bin/env bash
# Installs tide's Debian build, test and reproduce dependencies. Idempotent:
# it only calls apt-get when a package is missing.
set -euo pipefail

PKGS=(
  build-essential cmake ninja-build pkg-config git
  libibverbs-dev librdmacm-dev ibverbs-providers ibverbs-utils rdmacm-utils perftest
  libhdf5-dev hdf5-tools
  libbenchmark-dev libgtest-dev libgmock-dev
  libcli11-dev libtomlplusplus-dev nlohmann-json3-dev libfmt-dev libspdlog-dev
  libxxhash-dev libzstd-dev liburing-dev
  python3 python3-matplotlib python3-h5py python3-numpy
  pybind11-dev python3-pytest python3-torch
  qemu-system-x86 busybox-static kmod cpio xz-utils
  iperf3 iproute2 clang lld valgrind openmpi-bin
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  SUDO=sudo
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
