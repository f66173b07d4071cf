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
# A directory configured for another compiler is configured afresh: CMake
# would reset its cache itself, but then drop this run's -D options.
want=
for a in "$@"; do
  case $a in -DCMAKE_CXX_COMPILER=*) want=$(command -v "${a#-DCMAKE_CXX_COMPILER=}" || true) ;; esac
done
have=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build_dir/CMakeCache.txt" 2>/dev/null || true)
[ -n "$have" ] && have=$(command -v "$have" || echo "$have")
stale=false
if [ -n "$want" ]; then
  [ -n "$have" ] && [ "$want" != "$have" ] && stale=true
elif [[ $have == *clang* ]]; then
  stale=true  # the default compiler (GCC) wanted
fi
if $stale; then
  echo "build.sh: $build_dir was configured for $have; configuring it afresh"
  rm -rf "$build_dir/CMakeCache.txt" "$build_dir/CMakeFiles"
fi
cmake -S . -B "$build_dir" -G Ninja "${args[@]}" "$@" >/dev/null
# shellcheck disable=SC2086  # a list of target names
ninja -C "$build_dir" -j "$(nproc)" ${MUSTER_TARGETS:-}
