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
  # An entry's own pytest arguments, from a "# pytest: ARGS" line of its file (no spaces inside
  # an argument: they are split on whitespace).
  read -r -a extra <<< "$(sed -n 's/^# *pytest: *//p' "$file" | head -n 1)"
  scripts/test.sh --matrix "$entry" -q -p no:cacheprovider ${extra[@]+"${extra[@]}"} "$@" || failed+=("$entry")
  echo "== $entry took $((SECONDS - start)) s (setup included)" >&2
done
echo "== matrix entries that failed: ${failed[*]:-none}; now the default environment (cu12)" >&2
scripts/test.sh -q "$@" || failed+=(cu12)
[ ${#failed[@]} -eq 0 ]
