#!/usr/bin/env bash
# The test command: sets up .venv (once), then lints, type-checks and runs the test suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m gpu` for the GPU tier only.
#
# `scripts/test.sh --matrix ENTRY [pytest args]` (or PYCUDNN_MATRIX=ENTRY) runs the test suite in
# the version-matrix entry ENTRY instead (requirements/constraints-ENTRY.txt, e.g. cu12-oldest): its
# own environment under build/venvs/, no lint (it does not depend on the library versions).
# scripts/test-matrix.sh runs every entry.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
if [ "${1:-}" = "--matrix" ]; then
  [ $# -ge 2 ] || { echo "usage: scripts/test.sh --matrix ENTRY [pytest args]" >&2; exit 2; }
  export PYCUDNN_MATRIX="$2"
  shift 2
fi
. scripts/env.sh
if [ -n "${PYCUDNN_MATRIX:-}" ]; then
  echo "== pytest ($PYCUDNN_MATRIX: $(python -c 'import pycudnn, pycutensor; print("cuDNN", ".".join(map(str, pycudnn.version_tuple())), "cuTENSOR", ".".join(map(str, pycutensor.version_tuple())))'))"
  exec python -m pytest "$@"
fi
echo "== ruff check"; ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy"; mypy _nvbind pycudnn pycutensor
echo "== pytest"; python -m pytest "$@"
