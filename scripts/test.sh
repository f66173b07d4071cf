#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole default test suite:
# every unit, transcript, simulator and CLI test and the layering check, in
# the normal build and again under AddressSanitizer + UndefinedBehaviorSanitizer;
# then the threaded parts' tests under ThreadSanitizer (scripts/tsan.sh);
# then every libFuzzer target for 10 s (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
ctest --test-dir build -j "$(nproc)" --output-on-failure
scripts/build.sh --sanitize
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  ctest --test-dir build-asan -j "$(nproc)" --output-on-failure
scripts/tsan.sh
scripts/fuzz.sh 10
