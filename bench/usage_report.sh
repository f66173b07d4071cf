#!/usr/bin/env bash
# What a usage report costs: GET /v1/usage (by queue, and by job as
# `muster history` asks) over 10,000 jobs (8,000 running on 1,000 static
# nodes of 8 GPUs, the rest pending), each read from the store and its
# attempts summed. Wall time per request, the median of ROUNDS, measured
# with curl on the same machine, as their owner; and the dashboard's usage page (a request
# per hour of the last 24 hours, and one for the whole window).
#
#   bench/usage_report.sh [MUSTER] [BENCH]
set -euo pipefail
cd "$(dirname "$0")/.."
MUSTER=$(realpath "${1:-build/cmd/muster/muster}")
BENCH=$(realpath "${2:-build/bench/muster_bench_api}")
DIR=${DIR:-/var/tmp/muster-usage-report}
PORT=${PORT:-8476}
ROUNDS=${ROUNDS:-5}
source bench/static_cluster.sh
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
timed() {  # seconds of one GET, ROUNDS times, the median in ms
  for _ in $(seq "$ROUNDS"); do
    curl -s -o /dev/null -w '%{time_total}\n' -H "Authorization: Bearer $MUSTER_TOKEN" "$url$1"
  done | median | awk '{ printf "%.0f", $1 * 1000 }'
}
echo "by queue: $(timed '/v1/usage?by=queue') ms; by job: $(timed '/v1/usage?by=job') ms"
hour() { date -u -d "@$1" +%Y-%m-%dT%H:%M:%SZ; }
now=$(date +%s)
start=$(( (now / 3600 + 1) * 3600 - 86400 ))
t0=$(date +%s%N)
for h in $(seq 0 23); do
  from=$(( start + h * 3600 )); [ "$from" -ge "$now" ] && break
  curl -s -o /dev/null -H "Authorization: Bearer $MUSTER_TOKEN" "$url/v1/usage?by=queue&from=$(hour $from)&to=$(hour $(( from + 3600 )))"
done
curl -s -o /dev/null -H "Authorization: Bearer $MUSTER_TOKEN" "$url/v1/usage?by=queue&from=$(hour $start)"
echo "the dashboard's usage page (24 hours): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
