#!/usr/bin/env bash
# The lint phase of scripts/test.sh: every C++ file in .clang-format's
# format (scripts/format.sh --check), and clang-tidy clean on the C++ files
# changed since the commit .ci/tidy-base names (scripts/tidy.sh). Move that
# commit forward only to one from which scripts/tidy.sh passes.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! scripts/format.sh --check; then
  echo "lint: the files above are not in .clang-format's format (scripts/format.sh formats them)"
  exit 1
fi
scripts/tidy.sh "$(cat .ci/tidy-base)"
