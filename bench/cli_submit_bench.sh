#!/usr/bin/env bash
# One `muster submit` process per job, as `sbatch` is used in a shell loop:
# a fresh `muster server` (as in submit_bench.sh), then N submits one after
# another and 8 loops of N/3 in parallel, for each CLI binary given (the
# server is always the first), ROUNDS times.
#
#   bench/cli_submit_bench.sh [MUSTER...]   (default: build/cmd/muster/muster)
#   DIR=/var/tmp/muster-cli-bench PORT=8479 N=300 ROUNDS=2 bench/cli_submit_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -gt 0 ] || set -- build/cmd/muster/muster
DIR=${DIR:-/var/tmp/muster-cli-bench}
PORT=${PORT:-8479}
N=${N:-300}
ROUNDS=${ROUNDS:-2}
source bench/bench_server.sh
start_bench_server "$1" "$DIR" "$PORT"
export MUSTER_SERVER="http://127.0.0.1:$PORT"
loop() {  # $1 binary, $2 count
  for _ in $(seq "$2"); do "$1" submit --parsable --gpus 1 -- sleep 1 > /dev/null; done
}
for _ in $(seq "$ROUNDS"); do
  for cli in "$@"; do
    t0=$EPOCHREALTIME
    loop "$cli" "$N"
    t1=$EPOCHREALTIME
    pids=()
    for _ in $(seq 8); do loop "$cli" $((N / 3)) & pids+=($!); done
    wait "${pids[@]}"
    t2=$EPOCHREALTIME
    awk -v c="$cli" -v n="$N" -v a="$t0" -v b="$t1" -v d="$t2" -v p=$((8 * (N / 3))) \
      'BEGIN { printf "%s: one after another %.1f jobs/s, 8 in parallel %.1f jobs/s\n", c, n / (b - a), p / (d - b) }'
  done
done
