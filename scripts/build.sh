#!/usr/bin/env bash
# Configures and builds Muster into build/ (or $MUSTER_BUILD_DIR).
# Usage: scripts/build.sh [--sanitize] [extra cmake -D options...]
# MUSTER_TARGETS="a b": build those ninja targets only (scripts/tsan.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${MUSTER_BUILD_DIR:-build}
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
if [ "${1:-}" = "--sanitize" ]; then
  shift
  build_dir=${MUSTER_BUILD_DIR:-build-asan}
  args=(-DCMAKE_BUILD_TYPE=Debug -DMUSTER_SANITIZE=ON -DMUSTER_BUILD_BENCH=OFF)
fi
cmake -S . -B "$build_dir" -G Ninja "${args[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # a list of target names
ninja -C "$build_dir" -j "$(nproc)" ${MUSTER_TARGETS:-}
