#!/usr/bin/env bash
# Runs a sanitizer build's tests as scripts/test.sh's sanitizer phases do:
# every test not labelled `process` but the long simulations
# test/sanitizer_sample.txt lists as "skip", and of those labelled
# `process` the ones it names. With MUSTER_SANITIZE_ALL=1
# (scripts/test.sh --all) every test runs.
#   scripts/ctest_sample.sh BUILD_DIR [ctest options, e.g. -L tsan]
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$1
shift
if [ "${MUSTER_SANITIZE_ALL:-0}" = 1 ]; then
  exec ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure "$@"
fi
sample=$(grep -vE '^[[:space:]]*(#|$|skip )' test/sanitizer_sample.txt | paste -sd '|')
skip=$(sed -n 's/^skip //p' test/sanitizer_sample.txt | paste -sd '|')
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure -LE process -E "^(${skip})\$" "$@"
ctest --test-dir "$dir" -j "$(nproc)" --output-on-failure -L process -R "^(${sample})\$" "$@"
