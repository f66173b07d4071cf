#!/usr/bin/env bash
# Runs a sanitizer build's tests as scripts/test.sh's sanitizer phases do:
# every test not labelled `process` but the long simulations
# test/sanitizer_sample.txt lists as "skip" (and, in the ASan build, those
# listed "skip-asan"), and of those labelled `process` the ones it names.
# With MUSTER_SANITIZE_ALL=1
# (scripts/test.sh --all) every test runs.
#   scripts/ctest_sample.sh BUILD_DIR [ctest options, e.g. -L tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
if [ "${MUSTER_SANITIZE_ALL:-0}" = 1 ]; then
  exec ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure "$@"
fi
sample=$(grep -vE '^[[:space:]]*(#|$|skip |skip-asan )' test/sanitizer_sample.txt | paste -sd '|')
# "skip-asan " lines too in the ASan/UBSan build.
tag='skip'
grep -q '^MUSTER_SANITIZE:BOOL=ON' "$dir/CMakeCache.txt" 2>/dev/null && tag='skip\(-asan\)\{0,1\}'
skip=$(sed -n "s/^$tag //p" test/sanitizer_sample.txt | paste -sd '|')
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure -LE process -E "^(${skip})\$" "$@"
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure -L process -R "^(${sample})\$" "$@"
