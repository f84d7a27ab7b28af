#!/usr/bin/env bash
# Creates (once) and activates a virtual environment with cuDNN 9, cuTENSOR 2, cuBLAS, cuda-core and
# the test tools at the versions of one pinned constraints file. A second run finds the environment
# up to date and returns in about a second. Source it (`. scripts/env.sh`) or let scripts/demo.sh
# and scripts/test.sh do it.
#
# Default: .venv with requirements/constraints-cu12.txt (the newest CUDA 12 stack, the one the
# bindings are generated from) and the development tools. PYCUDNN_MATRIX=<entry> selects a
# version-matrix entry instead: requirements/constraints-<entry>.txt, installed without the
# development tools into build/venvs/<entry> (see docs/versions.md).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
python="${PYTHON:-python3}"
entry="${PYCUDNN_MATRIX:-}"
if [ -n "$entry" ]; then
  constraints="$root/requirements/constraints-$entry.txt"
  venv="${PYCUDNN_VENV:-$root/build/venvs/$entry}"
  extras="${entry%%-*},test"  # cu12 or cu13
else
  constraints="$root/requirements/constraints-cu12.txt"
  venv="${PYCUDNN_VENV:-$root/.venv}"
  extras="cu12,test,dev"
fi
if [ ! -f "$constraints" ]; then
  echo "no constraints file $constraints (entries: $(cd "$root/requirements" && ls constraints-*.txt | sed 's/constraints-//; s/\.txt//' | tr '\n' ' '))" >&2
  return 2 2>/dev/null || exit 2
fi
# An entry may name the Python it runs on in a "# python: 3.10" line (the floors entry: the oldest
# Python the package claims). It is looked for on PATH, then among pyenv's versions; a candidate
# must run (a pyenv shim for a version not selected is on PATH but fails).
want_python=$(sed -n 's/^# *python: *\([0-9.]*\).*/\1/p' "$constraints" | head -n 1)
if [ -n "$want_python" ] && [ -z "${PYTHON:-}" ]; then
  python=""
  pyenv_versions=$(for dir in ${PYENV_ROOT:-} "${HOME:-/root}/.pyenv"; do
    ls -d "$dir/versions/$want_python".*/bin/"python$want_python" 2>/dev/null || true
  done | sort -rV)
  for candidate in "python$want_python" $pyenv_versions; do
    if "$candidate" -c "import sys, venv; assert sys.version.startswith('$want_python.')" >/dev/null 2>&1; then
      python=$candidate
      break
    fi
  done
  if [ -z "$python" ]; then
    echo "entry $entry runs on Python $want_python, found neither on PATH nor under pyenv; set PYTHON=/path/to/python$want_python" >&2
    return 2 2>/dev/null || exit 2
  fi
fi
stamp="$venv/.installed-stamp"
want=$(cat "$root/pyproject.toml" "$constraints" | sha256sum | cut -d' ' -f1)

if [ ! -x "$venv/bin/python" ]; then
  echo "creating virtual environment in $venv" >&2
  "$python" -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing [$extras] at the versions of ${constraints#"$root"/} into $venv (first run takes a few minutes)" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -c "$constraints" -e "$root[$extras]"
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
export VIRTUAL_ENV="$venv"
