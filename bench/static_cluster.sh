# Sourced by benchmarks: a server with 1,000 static nodes of 8 H100 GPUs
# (no agents) and 10,000 jobs submitted by user `bench` (8,000 of them
# placed, the rest pending). Needs MUSTER, BENCH, DIR and PORT; sets
# MUSTER_TOKEN (exported), pid (the server's, stopped on exit) and url.
rm -rf "$DIR"
mkdir -p "$DIR"
cat > "$DIR/server.yaml" <<YAML
listen: 127.0.0.1:$PORT
store: $DIR/muster.db
rateLimit: {perSecond: 1000000, burst: 1000000}
limits: {pendingJobsPerUser: 100000000}
prices: {H100: 3.00}
nodeGroups:
  - {count: 1000, gpus: 8, gpuType: H100, cpus: 64, memory: 512Gi, nodesPerLeaf: 32}
YAML
export MUSTER_MUNGE_SOCKET=none MUSTER_TOKEN_FILE=/nonexistent
MUSTER_TOKEN=$("$MUSTER" token create --store "$DIR/muster.db" --user bench --expires never 2>/dev/null)
export MUSTER_TOKEN
"$MUSTER" server -c "$DIR/server.yaml" > "$DIR/server.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null || true' EXIT
url=http://127.0.0.1:$PORT
MUSTER_RETRY_SECONDS=30 "$MUSTER" get queues --server "$url" > /dev/null
"$BENCH" submit --server "$url" --clients 4 --jobs 10000 > /dev/null
sleep 5  # the cycles that place them
