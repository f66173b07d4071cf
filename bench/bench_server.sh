# Sourced by the submit benchmarks. start_bench_server MUSTER DIR PORT [STORE]:
# a fresh `MUSTER server` on 127.0.0.1:PORT with its store (default: a SQLite
# file in DIR; every submit durable), 32 x 8 GPUs and the rate limit raised;
# waits until it answers, and stops it when the sourcing script exits.
# Exports MUSTER_TOKEN (user bench's, written into the store first) for the
# clients; MUSTER_MUNGE_SOCKET=none, so a machine's munged plays no part.
start_bench_server() {
  local muster=$1 dir=$2 port=$3 store=${4:-$2/muster.db}
  rm -rf "$dir"
  mkdir -p "$dir"
  cat > "$dir/bench.yaml" <<YAML
listen: 127.0.0.1:$port
store: "$store"
rateLimit: {perSecond: 1000000, burst: 1000000}
nodeGroups:
  - {count: 32, gpus: 8, gpuType: H100, cpus: 64, memory: 512Gi}
YAML
  export MUSTER_MUNGE_SOCKET=none MUSTER_TOKEN_FILE=/nonexistent
  MUSTER_TOKEN=$("$muster" token create --store "$store" --user bench --expires never 2>/dev/null || true)
  export MUSTER_TOKEN
  "$muster" server -c "$dir/bench.yaml" > "$dir/server.log" 2>&1 &
  bench_server_pid=$!
  trap 'kill $bench_server_pid 2>/dev/null; wait $bench_server_pid 2>/dev/null || true' EXIT
  # The CLI retries a refused connection for MUSTER_RETRY_SECONDS.
  MUSTER_RETRY_SECONDS=30 "$muster" get queues --server "http://127.0.0.1:$port" > /dev/null 2>&1 && return 0
  echo "the server did not answer within 30 s; see $dir/server.log" >&2
  return 1
}
