#!/usr/bin/env bash
# The main job: sets up .venv (once), then runs the smoke demos of both packages. They find the
# libraries, report versions and devices, and run real cuDNN and cuTENSOR work against NumPy, or
# say plainly what could not run without a GPU. Extra arguments go to both smoke commands
# (e.g. --require-gpu, --json).
#
# With --json the output is ONE JSON document: {"exit_code", "summary", "pycudnn": <smoke report>,
# "pycutensor": <smoke report>}. Exit codes are the smoke commands' (0 passed, 1 something failed,
# 3 could not run here): the worst of the two, a failure counting above could-not-run.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. scripts/env.sh
json=0
for arg in "$@"; do [ "$arg" = "--json" ] && json=1; done
if [ "$json" = 0 ]; then
  status=0
  python -m pycudnn smoke "$@" || status=$?
  python -m pycutensor smoke "$@" || status=$?
  exit $status
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cudnn_rc=0 cutensor_rc=0
python -m pycudnn smoke "$@" >"$tmp/pycudnn.json" || cudnn_rc=$?
python -m pycutensor smoke "$@" >"$tmp/pycutensor.json" || cutensor_rc=$?
python -m pycudnn._shared.merge_smoke "$tmp/pycudnn.json" "$cudnn_rc" "$tmp/pycutensor.json" "$cutensor_rc"
