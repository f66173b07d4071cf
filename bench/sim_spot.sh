#!/usr/bin/env bash
# Spot capacity in the simulator: Philly on 40 x 8 GPUs, half of the nodes
# spot, with a reclaim trace (random notices and a burst of a fifth of the
# cluster), run with the flags of docs/simulation.md's "Spot capacity"
# table; prints that table.
# Usage: bench/sim_spot.sh [path/to/muster] [traces dir]
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=bench/sim_lib.sh
source bench/sim_lib.sh "$@"

reclaims=/tmp/muster_sim_spot_reclaims.csv
bench/reclaim_trace.py --spot-nodes 20 --days 110 --per-day 2 --burst 4320000 --burst-fraction 0.4 \
  --seed 1 > "$reclaims"
base=(sim "$philly" --cluster bench/clusters/philly-40x8-halfspot.yaml --reclaim-downtime 1h)
heading "Philly, 40 x 8 GPUs, 20 nodes spot" \
  "muster ${base[*]} --reclaims reclaims.csv [flags]"
echo "| flags | jobs stopped | checkpointed in time | work lost to reclaims | jobs that lost more than one interval | mean wait | utilization |"
echo "|---|---|---|---|---|---|---|"
row() {  # label, flags...
  local label=$1; shift
  "$M" "${base[@]}" "$@" -o json > /tmp/muster_sim_spot.json
  python3 - "$label" /tmp/muster_sim_spot.json <<'PY'
import json, sys
label, d = sys.argv[1], json.load(open(sys.argv[2]))
r = d.get("reclaims", {})
stopped = r.get("jobs_stopped", 0)
saved = r.get("checkpointed", 0) if stopped else "-"
print(f"| {label} | {stopped:,} | {saved} | {r.get('lost_gpu_hours', 0):,.1f} GPU-h | "
      f"{d.get('jobs_lost_over_checkpoint_interval', 0)} | {d['mean_wait_s'] / 3600:.1f} h | {100 * d['utilization']:.1f}% |")
PY
}
row "no reclaims (without \`--reclaims\`)"
row "(2-minute notice, storage unlimited)" --reclaims "$reclaims"
row "\`--checkpoint-gbps 5\` (10 GB per GPU)" --reclaims "$reclaims" --checkpoint-gbps 5
row "\`--checkpoint-gbps 1\`" --reclaims "$reclaims" --checkpoint-gbps 1
row "\`--checkpoint-gbps 5 --reclaim-notice 0s\` (no notice)" --reclaims "$reclaims" --checkpoint-gbps 5 --reclaim-notice 0s
row "\`--spot-fraction 0.5\` (half the jobs stay on demand)" --reclaims "$reclaims" --spot-fraction 0.5
row "\`--checkpointing-fraction 0.5\` (half the jobs never checkpoint)" --reclaims "$reclaims" --checkpointing-fraction 0.5
row "\`--checkpointing-fraction 0.5 --spot-checkpoint-interval 0s\` (placed with no regard to it)" \
  --reclaims "$reclaims" --checkpointing-fraction 0.5 --spot-checkpoint-interval 0s
