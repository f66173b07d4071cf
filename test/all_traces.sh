#!/usr/bin/env bash
# Replays every normalized trace of ../shared/traces (when present) through
# `muster sim` and checks that each runs to the end and accounts for every
# row (completed + timeout + unschedulable + skipped == jobs).
# Exit 77 (skipped) when the traces are not there.
set -euo pipefail
muster=$1
traces=${2:-$(dirname "$0")/../../shared/traces}
if [ ! -d "$traces" ]; then
  echo "no traces at $traces: skipped"
  exit 77
fi
count=0
while IFS= read -r trace; do
  json=$("$muster" sim "$trace" --nodes 100x8 --nodes-per-leaf 10 --audit-every 1024 -o json)
  MUSTER_JSON=$json python3 - "$trace" <<'PY'
import json, os, sys
d = json.loads(os.environ["MUSTER_JSON"])
accounted = d["completed"] + d["timeout"] + d["unschedulable"] + d["skipped"]
print(f"{sys.argv[1]}: {d['jobs']} jobs, {d['completed']} completed, {d['skipped']} skipped, "
      f"{d['unschedulable']} unschedulable, utilization {100 * d['utilization']:.1f}%")
if accounted != d["jobs"] or d["jobs"] == 0:
    sys.exit(f"rows not accounted for: {accounted} of {d['jobs']}")
PY
  count=$((count + 1))
done < <(find "$traces" -path '*normalized*' -name '*.csv' | sort)
echo "$count traces replayed"
[ "$count" -gt 0 ]
