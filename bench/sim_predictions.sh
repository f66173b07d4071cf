#!/usr/bin/env bash
# Backfill by predicted run times against backfill by time limits: runs
# `muster sim` on the traces of docs/simulation.md with time limits of
# 2 x each job's duration and with one site limit for every job, once
# planning with the limits and once with each user's last two run times
# (core/run_time_predictor.h), and prints the Markdown tables found there
# ("Backfill with predicted run times").
# Usage: bench/sim_predictions.sh [path/to/muster] [traces dir]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sim_lib.sh
source bench/sim_lib.sh "$@"

table() {  # title, trace, cluster args...
  local title=$1 trace=$2; shift 2
  heading "$title" "muster sim $trace $* [--time-limit LIMIT] --backfill-by BY"
  echo "| limits | backfill by | mean JCT (h) | mean wait (h) | p50 wait (h) | p99 wait (h) | max wait (h) | utilization | timeouts | backfilled | promised a start | started later | mean slip (h) |"
  echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|"
  for limit in "" 7d 30d; do
    for by in limit prediction; do
      "$M" sim "$trace" "$@" ${limit:+--time-limit "$limit"} --backfill-by "$by" -o json > /tmp/muster_sim_predictions.json
      python3 - "${limit:-2 x duration}" "$by" /tmp/muster_sim_predictions.json <<'PY'
import json, sys
limit, by, path = sys.argv[1], sys.argv[2], sys.argv[3]
d = json.load(open(path))
h = lambda k: f"{d[k] / 3600:.2f}"
r = d["reservations"]
cells = [limit, by, h("mean_jct_s"), h("mean_wait_s"), h("p50_wait_s"), h("p99_wait_s"), h("max_wait_s"),
         f"{100 * d['utilization']:.1f}%", str(d["timeout"]), f"{d['backfilled']:,}", f"{r['jobs_promised']:,}",
         f"{r['started_late']:,}", f"{r['mean_slip_s'] / 3600:.2f}"]
print("| " + " | ".join(cells) + " |")
PY
    done
  done
}

table "ITP cluster04, 80 nodes x 8 GPUs, 16 nodes per leaf" "$itp" --nodes 80x8 --nodes-per-leaf 16
table "ITP cluster04, 640 GPUs as one pool" "$itp" --nodes 80x8 --single-pool
table "Philly, 100 nodes x 8 GPUs (800 GPUs), 10 nodes per leaf" "$philly" --nodes 100x8 --nodes-per-leaf 10
table "Philly, 64 nodes x 8 GPUs (512 GPUs, overloaded), 8 nodes per leaf" "$philly" --nodes 64x8 --nodes-per-leaf 8
