#!/usr/bin/env bash
# Builds Muster with ThreadSanitizer into build-tsan/ and runs the tests of
# the threaded parts under it: the server (its control loop, HTTP event loop
# and workers, store writer, agents' waits), the agent (watcher, launcher,
# log server), HTTP and the store; of those that start real processes, the
# sample test/sanitizer_sample.txt names. Every report fails the run.
# Usage: scripts/tsan.sh [extra ctest arguments, e.g. -R server_test]
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what those tests need (the tsan_tests target), and extra cmake options
# from $MUSTER_CMAKE_OPTIONS (scripts/test.sh: a unity build, line tables).
# shellcheck disable=SC2086
MUSTER_BUILD_DIR=build-tsan MUSTER_TARGETS=tsan_tests scripts/build.sh -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMUSTER_TSAN=ON \
  -DMUSTER_BUILD_BENCH=OFF ${MUSTER_CMAKE_OPTIONS:-}
# halt_on_error: a race fails its test. second_deadlock_stack: both stacks of a
# lock-order inversion. The servers and agents the tests start are TSan
# builds too and inherit these options.
export TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 history_size=4 suppressions=$PWD/test/tsan.supp"
# The in-process tests labelled tsan, and the sample of real-process ones
# (scripts/ctest_sample.sh; MUSTER_SANITIZE_ALL=1: all of them).
scripts/ctest_sample.sh build-tsan -L tsan "$@"
