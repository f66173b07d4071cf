#!/usr/bin/env bash
# What authentication and TLS cost a submit: the same submit benchmark
# against a server that authenticates every request (a bearer token: lookup
# by id, SHA-256 of the secret, constant-time compare; the audit row in the
# job's own transaction), the same over HTTPS (kept-alive connections, as
# the CLI's and agents' are), and one built from the last commit before
# authentication, which took the caller's word (OLD). Rounds alternate
# between the three, same machine, same run; compare the ratios.
#
#   bench/auth_cost.sh OLD_MUSTER [MUSTER] [BENCH]
#   ROUNDS=3 bench/auth_cost.sh /tmp/muster-old/build/cmd/muster/muster
#
# OLD_MUSTER: e.g. git worktree add /tmp/muster-old 59fd38f &&
#   (cd /tmp/muster-old && scripts/build.sh) (the build needs nothing else).
set -euo pipefail
cd "$(dirname "$0")/.."
OLD=$(realpath "${1:?usage: bench/auth_cost.sh OLD_MUSTER [MUSTER] [BENCH]}")
MUSTER=$(realpath "${2:-build/cmd/muster/muster}")
BENCH=$(realpath "${3:-build/bench/muster_bench_api}")
DIR=${DIR:-/var/tmp/muster-auth-cost}
PORT=${PORT:-8474}
ROUNDS=${ROUNDS:-3}
source bench/bench_server.sh
# The server's CPU time (user and system, ms): with the load generator on
# the same cores, throughput also pays for the client's side; this does not.
server_cpu_ms() {
  awk -v hz="$(getconf CLK_TCK)" '{ print int(($14 + $15) * 1000 / hz) }' "/proc/$bench_server_pid/stat"
}
make_bench_certs "$DIR/certs"
for round in $(seq "$ROUNDS"); do
  for which in old new new+tls; do
    binary=$MUSTER
    [ "$which" = old ] && binary=$OLD
    BENCH_TLS=""
    [ "$which" = new+tls ] && BENCH_TLS=$DIR/certs
    start_bench_server "$binary" "$DIR/$which" "$PORT"
    url=$bench_server_url
    "$BENCH" submit --server "$url" --clients 1 --jobs 3000 | sed "s/^/round $round $which 1 client: /"
    before=$(server_cpu_ms)
    "$BENCH" submit --server "$url" --clients 8 --jobs 10000 | sed "s/^/round $round $which 8 clients: /"
    echo "round $round $which 8 clients: server CPU $(( ($(server_cpu_ms) - before) / 10 )) ms per 1000 jobs"
    kill "$bench_server_pid"; wait "$bench_server_pid" 2>/dev/null || true
    trap - EXIT
  done
done
