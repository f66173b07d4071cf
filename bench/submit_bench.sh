#!/usr/bin/env bash
# The control plane's submit benchmark, reproducibly: a fresh `muster server`
# (SQLite store on DIR's disk, every submit durable, 32 x 8 GPUs, rate limit
# raised), then the HTTP stack's ceiling (ping) and submits from each number
# of clients in CLIENTS (1: 3,000 jobs; 8: 10,000; more: 20,000), each run
# ROUNDS times.
#
#   bench/submit_bench.sh [MUSTER] [BENCH]   (defaults: build/cmd/muster/muster build/bench/muster_bench_api)
#   DIR=/var/tmp/muster-bench PORT=8472 ROUNDS=3 CLIENTS="1 8" bench/submit_bench.sh
#   CLIENTS="8 32 64" ROUNDS=1 bench/submit_bench.sh      # the peak rate
set -euo pipefail
cd "$(dirname "$0")/.."
MUSTER=${1:-build/cmd/muster/muster}
BENCH=${2:-build/bench/muster_bench_api}
DIR=${DIR:-/var/tmp/muster-bench}
PORT=${PORT:-8472}
ROUNDS=${ROUNDS:-3}
CLIENTS=${CLIENTS:-1 8}
source bench/bench_server.sh
start_bench_server "$MUSTER" "$DIR" "$PORT"
url="http://127.0.0.1:$PORT"
for _ in $(seq "$ROUNDS"); do
  "$BENCH" ping --server "$url" --clients 8 --jobs 20000
  for c in $CLIENTS; do
    jobs=20000
    [ "$c" -le 8 ] && jobs=10000
    [ "$c" -eq 1 ] && jobs=3000
    "$BENCH" submit --server "$url" --clients "$c" --jobs "$jobs"
  done
done
