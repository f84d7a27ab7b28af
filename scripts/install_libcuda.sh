#!/usr/bin/env bash
# Installs Debian's NVIDIA user-space driver library (libcuda.so.1, package libcuda1 from the
# non-free component) on a machine without a GPU. With it, cuDNN's backend can finalise graphs
# and run heuristics (cuInit then reports "no device" instead of the library being absent).
# Idempotent; needs root and apt. Does nothing when libcuda.so.1 is already present.
set -euo pipefail
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "libcuda.so.1 already present"; exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "apt-get not found: install the NVIDIA driver library (libcuda.so.1) by hand" >&2; exit 1
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
# libcuda1 lives in non-free and depends on nvidia-support from contrib.
if [ ! -f /etc/apt/sources.list.d/nonfree-nvidia.sources ]; then
  $SUDO tee /etc/apt/sources.list.d/nonfree-nvidia.sources >/dev/null <<SRC
Types: deb
URIs: http://deb.debian.org/debian
Suites: ${codename} ${codename}-updates
Components: contrib non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends libcuda1 >/dev/null
ldconfig -p | grep 'libcuda\.so\.1 '
