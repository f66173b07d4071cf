#!/usr/bin/env bash
# Runs `muster sim` for every policy on the traces and clusters that
# docs/simulation.md reports, and prints the Markdown tables found there.
# Usage: bench/sim_tables.sh [path/to/muster] [traces dir]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sim_lib.sh
source bench/sim_lib.sh "$@"

table() {  # title, trace, cluster args...
  local title=$1 trace=$2; shift 2
  heading "$title" "muster sim $trace $* --policy POLICY"
  echo "| policy | mean JCT (h) | p50 JCT (h) | p99 JCT (h) | mean wait (h) | p50 wait (h) | p99 wait (h) | max wait (h) | mean queued (h) | max queued (h) | preemptions | lost GPU-h | makespan (h) | utilization | unschedulable | sim time (s) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for policy in fifo fifo-skip sjf muster "las --preemption"; do
    local start end
    start=$(date +%s%N)
    # shellcheck disable=SC2086  # "las --preemption" is a policy and a flag
    "$M" sim "$trace" "$@" --policy $policy -o json > /tmp/muster_sim_row.json
    end=$(date +%s%N)
    bench/sim_row.py "$policy" "$(( (end - start) / 1000000 ))e-3" < /tmp/muster_sim_row.json
  done
}

table "ITP cluster04, 640 GPUs as one pool" "$itp" --nodes 80x8 --single-pool
table "ITP cluster04, 80 nodes x 8 GPUs, 16 nodes per leaf" "$itp" --nodes 80x8 --nodes-per-leaf 16
table "Philly, 100 nodes x 8 GPUs (800 GPUs), 10 nodes per leaf" "$philly" --nodes 100x8 --nodes-per-leaf 10
table "Philly, 64 nodes x 8 GPUs (512 GPUs, overloaded), 8 nodes per leaf" "$philly" --nodes 64x8 --nodes-per-leaf 8
