#!/usr/bin/env bash
# Builds the API reference (docs/api, Sphinx autodoc of the public modules) into build/docs/api,
# with warnings as errors. Uses the active virtual environment; with none active it sets up and
# activates .venv first (scripts/env.sh: its dev extra has Sphinx), as scripts/test.sh does.
# Extra arguments go to sphinx-build.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
if [ -z "${VIRTUAL_ENV:-}" ]; then
  . "$root/scripts/env.sh"
fi
out="${PYCUDNN_DOCS_OUT:-$root/build/docs/api}"
export PYTHONPATH="$root${PYTHONPATH:+:$PYTHONPATH}"
exec python -m sphinx -E -W --keep-going -q -b html "$@" "$root/docs/api" "$out"
