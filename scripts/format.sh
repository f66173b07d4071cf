#!/usr/bin/env bash
# Formats every C++ file of the tree with .clang-format (Debian's
# clang-format-14). --check: changes nothing, lists the files that differ
# and fails when there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  bad=0
  for f in "${files[@]}"; do
    if ! clang-format-14 --style=file "$f" | cmp -s - "$f"; then
      echo "$f"
      bad=1
    fi
  done
  exit $bad
fi
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 20 clang-format-14 --style=file -i
