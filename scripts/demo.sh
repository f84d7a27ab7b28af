#!/usr/bin/env bash
# The main job: sets up .venv (once), then runs the smoke demos of both packages. They find the
# libraries, report versions and devices, and run real cuDNN and cuTENSOR work against NumPy, or
# say plainly what could not run without a GPU. Its arguments, --json and --require-gpu, go to both
# smoke commands.
#
# With --json the output is ONE JSON document: {"exit_code", "summary", "pycudnn": <smoke report>,
# "pycutensor": <smoke report>} ({"exit_code": 2, "error", "usage"} for a bad argument;
# {"exit_code": 0, "usage", "help"} for --help). Exit codes
# are the smoke commands' (0 passed, 1 something failed, 3 could not run here): the worst of the
# two, a failure counting above could-not-run; 2 for an argument other than --json/--require-gpu.
set -euo pipefail
usage="usage: scripts/demo.sh [-h] [--json] [--require-gpu]"
help="$usage

The smoke demos of pycudnn and pycutensor (python -m pycudnn smoke, python -m pycutensor smoke).

options:
  -h, --help     show this help and exit
  --json         print exactly one JSON document on stdout (its exit_code repeats the exit code)
  --require-gpu  fail when checks that need a GPU cannot run"
json=0
bad=""
want_help=0
for arg in "$@"; do
  case "$arg" in
    --json) json=1 ;;
    --require-gpu) ;;
    -h | --help) want_help=1 ;;
    *) [ -n "$bad" ] || bad=$arg ;;
  esac
done
# Read to the end first: --json after --help still asks for the help as a JSON document.
if [ "$want_help" = 1 ] && [ -z "$bad" ]; then
  if [ "$json" = 1 ]; then
    python3 -c 'import json, sys; print(json.dumps({"exit_code": 0, "usage": sys.argv[1], "help": sys.argv[2]}, indent=2))' "$usage" "$help"
  else
    echo "$help"
  fi
  exit 0
fi
# Checked here, before the two smoke commands, so that a bad argument is reported once, under
# this script's name (and, with --json, as the one JSON document the script promises).
if [ -n "$bad" ]; then
  message="scripts/demo.sh: error: unrecognized argument: $bad"
  if [ "$json" = 1 ]; then
    python3 -c 'import json, sys; print(json.dumps({"exit_code": 2, "error": sys.argv[1], "usage": sys.argv[2]}, indent=2))' "$message" "$usage"
  else
    printf '%s\n%s\n' "$usage" "$message" >&2
  fi
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
. scripts/env.sh
if [ "$json" = 0 ]; then
  cudnn_rc=0 cutensor_rc=0
  python -m pycudnn smoke "$@" || cudnn_rc=$?
  python -m pycutensor smoke "$@" || cutensor_rc=$?
  # The worst of the two, as _nvbind.merge_smoke ranks them for --json: a failure (1 above any
  # other) above could-not-run (3) above success (0).
  status=0
  for rc in "$cudnn_rc" "$cutensor_rc"; do
    case "$rc" in
      0) ;;
      3) [ "$status" != 0 ] || status=3 ;;
      1) status=1 ;;
      *) if [ "$status" = 0 ] || [ "$status" = 3 ]; then status=$rc; fi ;;
    esac
  done
  exit $status
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cudnn_rc=0 cutensor_rc=0
python -m pycudnn smoke "$@" >"$tmp/pycudnn.json" || cudnn_rc=$?
python -m pycutensor smoke "$@" >"$tmp/pycutensor.json" || cutensor_rc=$?
python -m _nvbind.merge_smoke "$tmp/pycudnn.json" "$cudnn_rc" "$tmp/pycutensor.json" "$cutensor_rc"
