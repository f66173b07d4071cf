#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/, clang 14) and runs each for SECONDS
# (default 60) from its seed corpus; new inputs go to BUILD/corpus/TARGET,
# never into the checked-in seeds. Any crash, leak, timeout or broken
# promise fails the run, leaving its input in BUILD/ (replay:
# BUILD/fuzz/TARGET BUILD/crash-...).
#
#   scripts/fuzz.sh [SECONDS]      # in build-fuzz/, configured here
#   MUSTER_FUZZ_BUILD_DIR=build-asan scripts/fuzz.sh 10
#                                  # scripts/test.sh: in its clang sanitizer
#                                  # build, configured with MUSTER_FUZZ=ON
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
targets=(job_spec_fuzz manifest_fuzz agent_protocol_fuzz sim_input_fuzz server_options_fuzz http_request_fuzz
         http_response_fuzz credentials_fuzz tls_fuzz)
build=${MUSTER_FUZZ_BUILD_DIR:-build-fuzz}
if [ "$build" = build-fuzz ]; then
  launcher=()
  command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # A unity build with line tables, as the test command's other builds
  # (docs/testing.md); clang's thread-safety analysis too (MUSTER_THREAD_SAFETY).
  cmake -S . -B build-fuzz -G Ninja -DCMAKE_CXX_COMPILER=clang++-14 "${launcher[@]}" \
    -DMUSTER_FUZZ=ON -DMUSTER_BUILD_TESTS=OFF -DMUSTER_BUILD_BENCH=OFF -DMUSTER_UNITY=ON -DMUSTER_LINE_TABLES=ON \
    -DMUSTER_THREAD_SAFETY=ON > /dev/null
fi
ninja -C "$build" "${targets[@]}" > "$build/fuzz-ninja.log" || { tail -60 "$build/fuzz-ninja.log"; exit 1; }
for t in "${targets[@]}"; do
  seeds=$PWD/fuzz/corpus/${t%_fuzz}
  work=$(realpath -m "$build/corpus/$t")
  mkdir -p "$work"
  extra=()
  [ "$t" = sim_input_fuzz ] && extra=(-rss_limit_mb=2048)
  (cd "$build" && "fuzz/$t" -max_total_time="$seconds" -timeout=20 "${extra[@]}" "$work" "$seeds" \
     > "fuzz-$t.log" 2>&1) || { echo "fuzz: $t failed; see $build/fuzz-$t.log"; tail -20 "$build/fuzz-$t.log"; exit 1; }
  echo "fuzz: $t clean ($(grep -o 'Done [0-9]* runs' "$build/fuzz-$t.log" | head -1), ${seconds} s)"
done
