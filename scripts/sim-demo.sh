#!/usr/bin/env bash
# Installs what is needed, builds, and replays a real GPU cluster trace
# through the scheduler under every policy, with its report. Uses the Philly trace from ../shared/traces when
# present, else the ITP slice committed under test/data/traces.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --demo
MUSTER_TARGETS=muster scripts/build.sh -DMUSTER_UNITY=ON -DMUSTER_LINE_TABLES=ON \
  -DMUSTER_BUILD_TESTS=OFF -DMUSTER_BUILD_BENCH=OFF
philly=../shared/traces/philly-pollux/normalized.csv
if [ -f "$philly" ]; then
  trace=$philly; cluster=(--nodes 100x8 --nodes-per-leaf 10)
else
  trace=test/data/traces/itp-cluster04-first1500.csv; cluster=(--nodes 24x8 --nodes-per-leaf 4)
fi
for policy in fifo fifo-skip sjf muster; do
  echo
  build/cmd/muster/muster sim "$trace" "${cluster[@]}" --policy "$policy"
done
