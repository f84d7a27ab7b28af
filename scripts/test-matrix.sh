#!/usr/bin/env bash
# Runs the CPU tier against every version-matrix entry (requirements/constraints-*.txt; see
# docs/versions.md), each in its own environment, then the default environment's full check
# (lint, types, tests) last. Extra arguments go to pytest. Exits non-zero when any entry fails;
# the last line printed is pytest's summary of the default environment.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
failed=()
for file in requirements/constraints-*.txt; do
  entry=$(basename "$file" .txt); entry=${entry#constraints-}
  [ "$entry" = cu12 ] && continue  # the default environment, run last
  start=$SECONDS
  scripts/test.sh --matrix "$entry" -q -p no:cacheprovider "$@" || failed+=("$entry")
  echo "== $entry took $((SECONDS - start)) s (setup included)" >&2
done
echo "== matrix entries that failed: ${failed[*]:-none}; now the default environment (cu12)" >&2
scripts/test.sh -q "$@" || failed+=(cu12)
[ ${#failed[@]} -eq 0 ]
