#!/usr/bin/env bash
# Creates (once) and activates the project's virtual environment in .venv with the CUDA 12 stack
# (cuDNN 9, cuTENSOR 2, cuBLAS, cuda-core) and the test tools, at the versions pinned in
# requirements/constraints-cu12.txt. A second run finds the environment up to date and returns in
# about a second. Source it (`. scripts/env.sh`) or let scripts/demo.sh and scripts/test.sh do it.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="${PYCUDNN_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
stamp="$venv/.installed-stamp"
want=$(cat "$root/pyproject.toml" "$root/requirements/constraints-cu12.txt" | sha256sum | cut -d' ' -f1)

if [ ! -x "$venv/bin/python" ]; then
  echo "creating virtual environment in $venv" >&2
  "$python" -m venv "$venv"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "installing the cu12 stack and test tools into $venv (first run takes a few minutes)" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip
  "$venv/bin/python" -m pip install -q --disable-pip-version-check \
    -c "$root/requirements/constraints-cu12.txt" -e "$root[cu12,test,dev]"
  echo "$want" > "$stamp"
fi
export PATH="$venv/bin:$PATH"
export VIRTUAL_ENV="$venv"
