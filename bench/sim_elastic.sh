#!/usr/bin/env bash
# Elastic against fixed-size gangs: runs `muster sim` on the traces of
# docs/simulation.md with every gang of two or more replicas fixed, then
# elastic down to half or to a quarter of its replicas, and prints the
# Markdown tables found there ("Elastic jobs").
# Usage: bench/sim_elastic.sh [path/to/muster] [traces dir]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sim_lib.sh
source bench/sim_lib.sh "$@"

table() {  # title, trace, cluster args...
  local title=$1 trace=$2; shift 2
  heading "$title" "muster sim $trace $* --elastic-min F"
  echo "| gangs | mean JCT (h) | p50 JCT (h) | p99 JCT (h) | mean wait (h) | p50 wait (h) | p99 wait (h) | max wait (h) | mean queued (h) | max queued (h) | preemptions | lost GPU-h | makespan (h) | utilization | unschedulable | sim time (s) | growths | shrinks |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for f in 0 0.5 0.25; do
    local start end label
    label=$([ "$f" = 0 ] && echo "fixed" || echo "elastic, min ${f}x")
    start=$(date +%s%N)
    "$M" sim "$trace" "$@" --elastic-min "$f" -o json > /tmp/muster_sim_elastic.json
    end=$(date +%s%N)
    row=$(bench/sim_row.py "$label" "$(( (end - start) / 1000000 ))e-3" < /tmp/muster_sim_elastic.json)
    extra=$(python3 -c 'import json,sys; e=json.load(open(sys.argv[1]))["elastic"]; print("{:,} | {:,} |".format(e["growths"], e["shrinks"]))' /tmp/muster_sim_elastic.json)
    echo "${row} ${extra}"
  done
}

table "ITP cluster04, 80 nodes x 8 GPUs, 16 nodes per leaf" "$itp" --nodes 80x8 --nodes-per-leaf 16
table "Philly, 100 nodes x 8 GPUs (800 GPUs), 10 nodes per leaf" "$philly" --nodes 100x8 --nodes-per-leaf 10
table "Philly, 64 nodes x 8 GPUs (512 GPUs, overloaded), 8 nodes per leaf" "$philly" --nodes 64x8 --nodes-per-leaf 8
