#!/usr/bin/env bash
# Device check for container jobs (issue 23) on a real GPU node with cgroup
# v2: (1) a container task's cgroup tree (create, walk, signal, OOM seen by
# the task's group, removal) on v2; (2) a real NVML node reports whether it
# can run containers and its features, and a container job waits there with
# its reason (where the machine has no Podman); a process job still sees its GPU.
set -u
B=$(pwd)/build/device  # made by scripts/device/make_kit.sh
export LD_LIBRARY_PATH=$B/lib
M=$B/muster
W=/tmp/ctrcheck; rm -rf $W; mkdir -p $W
exec > >(tee $OUT/report.txt) 2>&1
echo "== machine"; uname -r; nvidia-smi -L 2>&1 | head -3; grep cgroup /proc/self/mounts | head -3; which podman nvidia-ctk
echo "== cgroup tree test"; $B/agent_unit_test --gtest_filter='CgroupTree*:ContainerCommand*' 2>&1 | tail -15
export MUSTER_MUNGE_SOCKET=none MUSTER_TOKEN_FILE=/nonexistent
cat > $W/server.yaml <<YAML
store: $W/muster.db
listen: 127.0.0.1:0
auth: {rootJobs: [root], munge: none}
YAML
export MUSTER_TOKEN=$($M token create --store $W/muster.db --user root --expires never 2>/dev/null)
$M server -c $W/server.yaml --port-file $W/port > $W/server.log 2>&1 &
for i in $(seq 100); do [ -s $W/port ] && break; sleep 0.1; done
export MUSTER_SERVER=http://127.0.0.1:$(cat $W/port)
$M token create --node gpu1 > $W/node.token 2>/dev/null; chmod 600 $W/node.token
$M agent --name gpu1 --state-dir $W/agent --token-file $W/node.token --start-jitter 0 --stop-tasks-on-exit > $W/agent.log 2>&1 &
for i in $(seq 100); do $M get nodes 2>/dev/null | grep -q gpu1 && break; sleep 0.2; done
echo "== agent start"; head -3 $W/agent.log
echo "== node containers"; $M get nodes -o json | grep -A3 -E '"containers|"features|gpuSource|gpuType"'
boxed=$($M submit --parsable --gpus 1 --image docker.io/library/busybox:latest -- sh -c 'echo in-container' 2>&1)
plain=$($M submit --parsable --gpus 1 -- sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES; nvidia-smi -L' 2>&1)
echo "submitted: $boxed $plain"
for i in $(seq 150); do n=$($M get job $plain -o json | grep -c '"state": "COMPLETED"\|"state": "FAILED"'); [ "$n" -ge 1 ] && break; sleep 0.2; done
$M get jobs
echo "== container job"; $M get job $boxed -o json | grep -E '"state"|"reason' | head -4
echo "== process job"; $M logs $plain
kill %2 %1 2>/dev/null; wait
cp $W/*.log $OUT/ 2>/dev/null
