#!/usr/bin/env bash
# Installs Debian's NVIDIA user-space driver library (libcuda.so.1, package libcuda1 from the
# non-free component) on a machine without a GPU. With it, cuDNN's backend can finalise graphs
# and run heuristics (cuInit then reports "no device" instead of the library being absent).
# Idempotent; needs root and apt. Does nothing when libcuda.so.1 is already present.
#
# libcuda1 lives in non-free and depends on nvidia-support from contrib, so the components
# "contrib non-free" are added to the Debian sources the machine already has (deb822 .sources
# files and one-line sources.list entries alike); no package source is written in here.
set -euo pipefail
if ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  echo "libcuda.so.1 already present"; exit 0
fi
if ! command -v apt-get >/dev/null; then
  echo "apt-get not found: install the NVIDIA driver library (libcuda.so.1) by hand" >&2; exit 1
fi
SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"

add_components() {  # $1: a sources file; adds contrib and non-free to each Debian entry in it
  local file=$1
  case "$file" in
    *.sources)
      $SUDO awk '
        /^[[:space:]]*Components:/ {
          line = $0
          if (line !~ /(^|[[:space:]])contrib([[:space:]]|$)/) line = line " contrib"
          if (line !~ /(^|[[:space:]])non-free([[:space:]]|$)/) line = line " non-free"
          print line; next
        }
        { print }' "$file" > "$file.new" && $SUDO mv "$file.new" "$file" ;;
    *)
      $SUDO awk '
        /^[[:space:]]*deb[[:space:]]/ && /debian/ {
          line = $0
          if (line !~ /[[:space:]]contrib([[:space:]]|$)/) line = line " contrib"
          if (line !~ /[[:space:]]non-free([[:space:]]|$)/) line = line " non-free"
          print line; next
        }
        { print }' "$file" > "$file.new" && $SUDO mv "$file.new" "$file" ;;
  esac
}

found=0
for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list; do
  [ -f "$f" ] || continue
  grep -qi debian "$f" || continue
  add_components "$f"; found=1
done
if [ "$found" -eq 0 ]; then
  echo "no Debian package source found to add 'contrib non-free' to; install libcuda1 by hand" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends libcuda1 >/dev/null
ldconfig -p | grep 'libcuda\.so\.1 '
