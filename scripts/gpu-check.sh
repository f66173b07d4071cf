#!/usr/bin/env bash
# Checks Muster on a machine with a real NVIDIA GPU: NVML discovery by the
# agent (UUIDs, model, memory, NVLinks, topology), a one-GPU job that sees
# exactly its GPU by UUID (nvidia-smi inside the job), a job without GPUs
# that cannot open the GPUs' device files even with CUDA_VISIBLE_DEVICES
# unset (the devices cgroup, or cgroup v2's BPF device program), and
# out-of-memory classification in this machine's cgroups. Prints what it
# found; exits 1 if a check fails.
#   scripts/gpu-check.sh [MUSTER_BINARY] [OUTPUT_DIR]
set -u
M=${1:-build/cmd/muster/muster}
OUT=${2:-$(mktemp -d)}
D=$(mktemp -d)
mkdir -p "$OUT"
PORT=18479
fail=0
check() { if eval "$2"; then echo "PASS $1"; else echo "FAIL $1"; fail=1; fi; }
echo "== machine"; uname -r; id -un; nvidia-smi -L 2>&1 | head -8
ldconfig -p 2>/dev/null | grep -m1 libnvidia-ml.so.1 || echo "libnvidia-ml.so.1 not in ldconfig"
mount | grep -E "cgroup2? " | head -3
# Credentials as on a cluster without munge: root's token in the store
# first, then a node token for the agent; root may run jobs here.
export MUSTER_MUNGE_SOCKET=none MUSTER_TOKEN_FILE=/nonexistent
printf 'auth: {rootJobs: [root], munge: none}\n' > "$D/server.yaml"
MUSTER_TOKEN=$("$M" token create --store "$D/m.db" --user root --expires never 2>/dev/null); export MUSTER_TOKEN
"$M" server -c "$D/server.yaml" --store "$D/m.db" --listen 127.0.0.1:$PORT > "$D/server.log" 2>&1 &
SP=$!
export MUSTER_SERVER=http://127.0.0.1:$PORT MUSTER_RETRY_SECONDS=5
"$M" token create --node gpu-node > "$D/node.token" 2>/dev/null; chmod 600 "$D/node.token"
"$M" agent --server http://127.0.0.1:$PORT --name gpu-node --state-dir "$D/agent" --token-file "$D/node.token" \
  --stop-tasks-on-exit --start-jitter 0 > "$D/agent.log" 2>&1 &
AP=$!
for i in $(seq 50); do "$M" get nodes 2>/dev/null | grep -q gpu-node && break; sleep 0.2; done
echo "== agent"; cat "$D/agent.log"
"$M" get nodes -o json > "$OUT/nodes.json"
echo "== nodes"; cat "$OUT/nodes.json"
check "NVML found GPUs" "grep -q '\"gpuSource\": *\"nvml\"' $OUT/nodes.json || grep -q '\"gpuSource\":\"nvml\"' $OUT/nodes.json"
J1=$("$M" submit --parsable --gpus 1 --time 2m -- sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES; nvidia-smi --query-gpu=uuid,name --format=csv,noheader')
J2=$("$M" submit --parsable --memory 64Mi --time 2m -- sh -c 'head -c 1G /dev/zero | tail -n 1 > /dev/null')
J3=$("$M" submit --parsable --gpus 0 --time 2m -- sh -c 'unset CUDA_VISIBLE_DEVICES NVIDIA_VISIBLE_DEVICES;
  for d in /dev/nvidia[0-9]*; do ( : 3<"$d" ) 2>&1 | sed "s|^|$d: |"; done; nvidia-smi -L 2>&1 | head -3')
for i in $(seq 100); do
  s1=$("$M" get jobs -o json | grep -c '"state": *"\(COMPLETED\|FAILED\|OUT_OF_MEMORY\|TIMEOUT\)"'); [ "$s1" -ge 3 ] && break; sleep 0.3
done
echo "== jobs"; "$M" get jobs
"$M" logs "$J1" > "$OUT/gpu-job.log"; echo "== GPU job output"; cat "$OUT/gpu-job.log"
cvd=$(sed -n 's/^CVD=//p' "$OUT/gpu-job.log")
check "the job saw one GPU by UUID" "[ -n \"$cvd\" ] && grep -q \"^$cvd,\" $OUT/gpu-job.log"
check "the GPU job completed" "\"$M\" get jobs | grep -E \"^$J1 \" | grep -q COMPLETED"
check "memory over the limit ended OUT_OF_MEMORY" "\"$M\" get jobs | grep -E \"^$J2 \" | grep -q OUT_OF_MEMORY"
"$M" logs "$J3" > "$OUT/no-gpu-job.log"; echo "== job without GPUs, CUDA_VISIBLE_DEVICES unset"; cat "$OUT/no-gpu-job.log"
check "a job without GPUs could not open their device files" \
  "grep -q 'Operation not permitted' $OUT/no-gpu-job.log && ! grep -q ': opened' $OUT/no-gpu-job.log"
kill $AP; wait $AP; kill $SP; wait $SP
cp "$D"/*.log "$OUT"/ 2>/dev/null
exit $fail
