#!/usr/bin/env bash
# Builds the API reference (docs/api, Sphinx autodoc of the public modules) into build/docs/api,
# with warnings as errors. Uses the active Python (scripts/env.sh's .venv has Sphinx in its dev
# extra); extra arguments go to sphinx-build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out="${PYCUDNN_DOCS_OUT:-$root/build/docs/api}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec python -m sphinx -E -W --keep-going -q -b html "$@" "$root/docs/api" "$out"
