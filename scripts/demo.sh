#!/usr/bin/env bash
# The main job: sets up .venv (once), then runs the smoke demos of both packages. They find the
# libraries, report versions and devices, and run real cuDNN and cuTENSOR work against NumPy, or
# say plainly what could not run without a GPU. Extra arguments go to both smoke commands
# (e.g. --require-gpu, --json).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. scripts/env.sh
status=0
python -m pycudnn smoke "$@" || status=$?
python -m pycutensor smoke "$@" || status=$?
exit $status
