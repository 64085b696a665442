#!/usr/bin/env bash
# Installs the Debian 12 packages HCL needs to build and test.
set -euo pipefail
packages=(build-essential cmake pkg-config libasio-dev libfabric-dev libibverbs-dev libfmt-dev libgtest-dev libgmock-dev libbenchmark-dev iproute2 libopenmpi-dev openmpi-bin python3-matplotlib hipcc libamdhip64-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq || true
$SUDO apt-get install -y -qq "${missing[@]}"
