#!/usr/bin/env bash
# What a Prometheus scraping /metrics every second costs the server, with
# 1,000 nodes (8 GPUs each, static) and 10,000 jobs (8,000 running, the
# rest pending): the server's CPU time (from /proc, user + system) over
# windows of SECONDS without scrapes and with one scrape a second,
# alternating ROUNDS times; the difference is the scrapes' cost.
#
#   bench/metrics_scrape.sh [MUSTER] [BENCH]
#   ROUNDS=3 SECONDS_EACH=20 bench/metrics_scrape.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MUSTER=$(realpath "${1:-build/cmd/muster/muster}")
BENCH=$(realpath "${2:-build/bench/muster_bench_api}")
DIR=${DIR:-/var/tmp/muster-metrics-scrape}
PORT=${PORT:-8475}
ROUNDS=${ROUNDS:-3}
SECONDS_EACH=${SECONDS_EACH:-20}
source bench/static_cluster.sh
cpu_ms() { awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$pid/stat"; }
bytes=$(curl -s -H "Authorization: Bearer $MUSTER_TOKEN" "$url/metrics" | wc -c)
echo "one scrape: $bytes bytes; $(curl -s -H "Authorization: Bearer $MUSTER_TOKEN" "$url/metrics" | grep -E '^muster_jobs|^muster_cluster_gpus' | tr '\n' ' ')"
for round in $(seq "$ROUNDS"); do
  before=$(cpu_ms); sleep "$SECONDS_EACH"; idle=$(( $(cpu_ms) - before ))
  before=$(cpu_ms)
  scrapes=()
  for _ in $(seq "$SECONDS_EACH"); do
    curl -s -o /dev/null -H "Authorization: Bearer $MUSTER_TOKEN" "$url/metrics" &
    scrapes+=($!)
    sleep 1
  done
  wait "${scrapes[@]}"
  scraped=$(( $(cpu_ms) - before ))
  awk -v r="$round" -v s="$SECONDS_EACH" -v i="$idle" -v c="$scraped" 'BEGIN {
    printf "round %d: server CPU over %d s: %d ms without scrapes, %d ms with one a second; the scrapes: %.2f%% of a core (%.1f ms a scrape)\n",
           r, s, i, c, (c - i) / (s * 10), (c - i) / s }'
done
