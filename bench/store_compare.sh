#!/usr/bin/env bash
# SQLite beside PostgreSQL, same machine, same run: a fresh server on each
# store is filled with 100,000 jobs (arrays of 100 from 8 clients), then
#   - submits, one job a request, from 1 and 8 clients (muster_bench_api),
#   - `muster get jobs` of everything, and of one screen (--limit 100),
#   - a restart: the time from start to serving as leader with the jobs.
# PostgreSQL is a throwaway local server (scripts/pg-local.sh) on this disk.
#
#   bench/store_compare.sh [MUSTER] [BENCH]
#   DIR=/var/tmp/muster-stores PORT=8473 JOBS=100000 bench/store_compare.sh
set -euo pipefail
cd "$(dirname "$0")/.."
MUSTER=${1:-build/cmd/muster/muster}
BENCH=${2:-build/bench/muster_bench_api}
DIR=${DIR:-/var/tmp/muster-stores}
PORT=${PORT:-8473}
PG_PORT=${PG_PORT:-5439}
JOBS=${JOBS:-100000}
MUSTER=$(realpath "$MUSTER")
BENCH=$(realpath "$BENCH")
source bench/bench_server.sh
[ -d "$DIR/pg/data" ] && scripts/pg-local.sh stop "$DIR/pg" 2>/dev/null
rm -rf "$DIR"
mkdir -p "$DIR"
pg_url=$(scripts/pg-local.sh start "$DIR/pg" "$PG_PORT")
url="http://127.0.0.1:$PORT"
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

for store in sqlite postgres; do
  target="$DIR/$store/muster.db"
  [ "$store" = postgres ] && target=$pg_url
  start_bench_server "$MUSTER" "$DIR/$store" "$PORT" "$target"
  trap 'kill $bench_server_pid 2>/dev/null; scripts/pg-local.sh stop "$DIR/pg" 2>/dev/null || true' EXIT
  "$BENCH" submit --server "$url" --clients 8 --jobs "$JOBS" --array 100 | sed "s/^/$store fill: /"
  "$BENCH" submit --server "$url" --clients 1 --jobs 3000 | sed "s/^/$store 1 client: /"
  "$BENCH" submit --server "$url" --clients 8 --jobs 10000 | sed "s/^/$store 8 clients: /"
  t=$(now); n=$("$MUSTER" get jobs --server "$url" --limit 0 | wc -l); echo "$store get jobs --limit 0 ($n lines): $(since "$t") s"
  t=$(now); "$MUSTER" get jobs --server "$url" --limit 100 > /dev/null; echo "$store get jobs --limit 100: $(since "$t") s"
  kill "$bench_server_pid"; wait "$bench_server_pid" 2>/dev/null || true
  t=$(now)
  "$MUSTER" server -c "$DIR/$store/bench.yaml" >> "$DIR/$store/server.log" 2>&1 &
  bench_server_pid=$!
  MUSTER_RETRY_SECONDS=60 "$MUSTER" get queues --server "$url" > /dev/null
  echo "$store restart to serving: $(since "$t") s"
  kill "$bench_server_pid"; wait "$bench_server_pid" 2>/dev/null || true
done
trap - EXIT
scripts/pg-local.sh stop "$DIR/pg"
exit 0
