#!/usr/bin/env bash
# Fails when a folder of the tree is not listed in docs/layout.md (a line
# that starts with its path and a slash): the top-level folders, every
# folder of src/ and its subfolders, and each folder of test/. Runs as the
# CTest test `layout_doc`.
set -euo pipefail
cd "$(dirname "$0")/.."
missing=0
while read -r dir; do
  if ! grep -q "^${dir}/" docs/layout.md; then
    echo "docs/layout.md does not list ${dir}/: add a line for it"
    missing=1
  fi
done < <(git ls-files | sed -n "s|/[^/]*$||p" | sort -u |
         awk -F/ '$0 != "." && (NF == 1 || ($1 == "src" && NF <= 3) || ($1 == "test" && NF == 2))')
exit $missing
