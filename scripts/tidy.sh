#!/usr/bin/env bash
# Runs clang-tidy (Debian's clang-tidy-14, the checks of .clang-tidy) on the
# C++ source files changed since BASE (default: $MUSTER_TIDY_BASE, else the
# commit before HEAD), and on the headers they include from the tree. Any
# finding fails the run. The compile commands come from a configure-only,
# file-by-file build directory (build-tidy/): nothing is compiled.
#   scripts/tidy.sh [BASE]      e.g. scripts/tidy.sh origin/main
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-${MUSTER_TIDY_BASE:-HEAD~1}}
if ! git rev-parse -q --verify "$base^{commit}" >/dev/null; then
  echo "tidy: no commit $base to compare with; nothing to check"
  exit 0
fi
mapfile -t files < <(git diff --name-only --diff-filter=AMR "$base" -- '*.cc' | grep -E '^(src|test|bench|cmd|fuzz)/' || true)
if [ ${#files[@]} -eq 0 ]; then
  echo "tidy: no C++ source changed since $base"
  exit 0
fi
cmake -S . -B build-tidy -G Ninja -DCMAKE_BUILD_TYPE=Debug -DMUSTER_UNITY=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON \
  -DMUSTER_BUILD_TESTS=ON -DMUSTER_BUILD_BENCH=ON > /dev/null
# Files the build does not compile (fuzz targets without MUSTER_FUZZ) have
# no command: they are left out, and said so.
checked=()
for f in "${files[@]}"; do
  if grep -q "\"file\": \"$PWD/$f\"" build-tidy/compile_commands.json; then
    checked+=("$f")
  else
    echo "tidy: $f is not in this build's compile commands; not checked"
  fi
done
[ ${#checked[@]} -eq 0 ] && exit 0
echo "tidy: ${#checked[@]} files changed since $base"
printf '%s\n' "${checked[@]}" | xargs -P "$(nproc)" -n 1 clang-tidy-14 -p build-tidy --quiet
