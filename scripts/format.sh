#!/usr/bin/env bash
# Formats every C++ file of the tree with .clang-format (Debian's
# clang-format-14). --check: changes nothing, lists the files that differ
# and fails when there are any.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tracked files and new ones not yet added (but not what .gitignore ignores).
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  # shellcheck disable=SC2016  # $1 is the inner shell's
  bad=$(printf '%s\n' "${files[@]}" |
    xargs -P "$(nproc)" -I{} sh -c 'clang-format-14 --style=file "$1" | cmp -s - "$1" || echo "$1"' _ {})
  [ -z "$bad" ] && exit 0
  echo "$bad"
  exit 1
fi
printf '%s\n' "${files[@]}" | xargs -P "$(nproc)" -n 20 clang-format-14 --style=file -i
