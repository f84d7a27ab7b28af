#!/usr/bin/env bash
# The test command: sets up .venv (once), then lints, type-checks and runs the test suite.
# Extra arguments go to pytest, e.g. `scripts/test.sh -m gpu` for the GPU tier only.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. scripts/env.sh
echo "== ruff check"; ruff check .
echo "== ruff format --check"; ruff format --check .
echo "== mypy"; mypy pycudnn pycutensor
echo "== pytest"; python -m pytest "$@"
