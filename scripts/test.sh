#!/usr/bin/env bash
# Installs what is needed, builds, and runs the whole default test suite:
# every test in the normal build; then, under AddressSanitizer +
# UndefinedBehaviorSanitizer (a clang build, with clang's thread-safety
# analysis), every unit, transcript, in-process and CLI test and the sample
# of real-process tests that test/sanitizer_sample.txt names
# (scripts/ctest_sample.sh); then the threaded parts' tests the same way
# under ThreadSanitizer (scripts/tsan.sh); then every libFuzzer target,
# built in the same clang build, for 10 s (scripts/fuzz.sh).
#
#   scripts/test.sh          what CI runs (.ci/run)
#   scripts/test.sh --all    the same, with every real-process test under
#                            both sanitizers too (the full sanitizer run)
#
# Every build here is a unity build (MUSTER_UNITY) with line tables only
# (MUSTER_LINE_TABLES, -g1: stack traces keep their files and lines): on
# CI's 2 cores a cold build so takes about half the time, and the builds
# are most of the run (docs/testing.md has the figures per phase). Warnings
# are errors in them (MUSTER_WERROR).
set -euo pipefail
cd "$(dirname "$0")/.."
export MUSTER_CMAKE_OPTIONS="-DMUSTER_UNITY=ON -DMUSTER_LINE_TABLES=ON -DMUSTER_WERROR=ON"
if [ "${1:-}" = "--all" ]; then
  export MUSTER_SANITIZE_ALL=1
elif [ $# -gt 0 ]; then
  echo "usage: scripts/test.sh [--all]" >&2
  exit 2
fi
# phase NAME COMMAND...: runs it, and records its wall time for the summary
# printed at the end (docs/testing.md keeps the measured figures).
phases=()
phase() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  phases+=("$(printf '%-12s %4d s' "$name" $((SECONDS - start)))")
}
summary() { printf 'test.sh phases:\n'; printf '  %s\n' "${phases[@]}"; printf '  %-12s %4d s\n' total "$SECONDS"; }
trap summary EXIT
phase deps scripts/install-deps.sh
# First, as it is quick: the tree's format (.clang-format), and clang-tidy
# (.clang-tidy) on the C++ files changed since .ci/tidy-base, the last
# commit from which every change was checked clean (docs/testing.md).
phase lint scripts/lint.sh
# Tests and benchmarks on, whatever an earlier scripts/demo.sh left in the cache.
# shellcheck disable=SC2086  # a list of options
phase build scripts/build.sh $MUSTER_CMAKE_OPTIONS -DMUSTER_BUILD_TESTS=ON -DMUSTER_BUILD_BENCH=ON
# Twice as many tests as cores: many of them wait on real time (leases,
# timeouts, other processes), so the cores would idle at one a core.
phase test ctest --test-dir build -j "$((2 * $(nproc)))" --output-on-failure
# The sanitizer build is clang's (the normal one is GCC's: two compilers'
# warnings), and one build serves three checks: the tests under ASan and
# UBSan, clang's thread-safety analysis (MUSTER_THREAD_SAFETY), and the
# libFuzzer targets (MUSTER_FUZZ), run from the same instrumented libraries.
# shellcheck disable=SC2086
phase asan-build scripts/build.sh --sanitize $MUSTER_CMAKE_OPTIONS -DCMAKE_CXX_COMPILER=clang++-14 \
  -DMUSTER_THREAD_SAFETY=ON -DMUSTER_FUZZ=ON
phase asan-test env UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
  scripts/ctest_sample.sh build-asan
phase tsan scripts/tsan.sh
phase fuzz env MUSTER_FUZZ_BUILD_DIR=build-asan scripts/fuzz.sh 10
