# Sourced by the submit benchmarks. start_bench_server MUSTER DIR PORT [STORE]:
# a fresh `MUSTER server` on 127.0.0.1:PORT with its store (default: a SQLite
# file in DIR; every submit durable), 32 x 8 GPUs and the rate limit raised;
# waits until it answers, and stops it when the sourcing script exits.
# Exports MUSTER_TOKEN (user bench's, written into the store first) for the
# clients; MUSTER_MUNGE_SOCKET=none, so a machine's munged plays no part.
# With BENCH_TLS=DIR (server.crt, server.key, ca.crt: make_bench_certs DIR)
# it serves HTTPS and exports MUSTER_CA. BENCH_LIMITS: its `limits:` line
# (default: the per-user checks on, at a limit no run reaches; empty for a
# server from before limits existed). Sets bench_server_url.
start_bench_server() {
  local muster=$1 dir=$2 port=$3 store=${4:-$2/muster.db}
  local tls_yaml=""
  bench_server_url=http://127.0.0.1:$port
  if [ -n "${BENCH_TLS:-}" ]; then
    tls_yaml="tls: {cert: $BENCH_TLS/server.crt, key: $BENCH_TLS/server.key}"
    bench_server_url=https://127.0.0.1:$port
    export MUSTER_CA=$BENCH_TLS/ca.crt
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  cat > "$dir/bench.yaml" <<YAML
$tls_yaml
listen: 127.0.0.1:$port
store: "$store"
rateLimit: {perSecond: 1000000, burst: 1000000}
${BENCH_LIMITS-limits: {pendingJobsPerUser: 100000000\}}
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
  MUSTER_RETRY_SECONDS=30 "$muster" get queues --server "$bench_server_url" > /dev/null 2>&1 && return 0
  echo "the server did not answer within 30 s; see $dir/server.log" >&2
  return 1
}

# make_bench_certs DIR: a CA of its own and a certificate it signs for
# 127.0.0.1 and localhost (ECDSA P-256, as a site would issue).
make_bench_certs() {
  local d=$1
  mkdir -p "$d"
  (
    cd "$d" && umask 077
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.crt \
      -subj /CN=bench-ca -days 2 2>/dev/null
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout server.key -out server.csr \
      -subj /CN=localhost 2>/dev/null
    printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > server.ext
    openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt -days 2 \
      -extfile server.ext 2>/dev/null
  )
}
