#!/usr/bin/env bash
# Two servers' submit rates side by side, alternating: bench/submit_bench.sh
# (ROUNDS=1, CLIENTS="1 8") with OLD, then NEW, ROUNDS times, so that the
# machine's drift falls on both alike. OLD is a server from before per-user
# limits existed (its configuration gets no `limits:` line); NEW runs with
# them on. Compare the mean rates of one run as a ratio.
#
#   bench/submit_compare.sh OLD_MUSTER [NEW_MUSTER] [BENCH]
#   (defaults: build/cmd/muster/muster build/bench/muster_bench_api; ROUNDS=3)
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$1
NEW=${2:-build/cmd/muster/muster}
BENCH=${3:-build/bench/muster_bench_api}
for round in $(seq "${ROUNDS:-3}"); do
  for which in old new; do
    if [ "$which" = old ]; then
      BENCH_LIMITS="" DIR=/var/tmp/muster-bench-old ROUNDS=1 CLIENTS="1 8" bench/submit_bench.sh "$OLD" "$BENCH"
    else
      DIR=/var/tmp/muster-bench-new ROUNDS=1 CLIENTS="1 8" bench/submit_bench.sh "$NEW" "$BENCH"
    fi | sed "s/^/round $round $which: /"
  done
done
