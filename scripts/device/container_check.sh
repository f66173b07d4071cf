#!/usr/bin/env bash
# Device check for container jobs (issue 23) on a real GPU node, mostly with
# cgroup v2: (1) a container task's cgroup tree (create, walk, signal, OOM
# seen by the task's group, removal); (2) with the Podman that make_kit.sh
# carries (and a CDI spec made from nvidia-smi where the NVIDIA Container
# Toolkit has none), a GPU container job sees exactly its GPU and runs
# nvidia-smi, a container job over its memory ends OUT_OF_MEMORY, a
# cancelled one leaves no container or cgroup; a process job still sees its
# GPU. Run from the repository root with build/device carried; the report
# goes to $OUT/report.txt.
set -u
B=$(pwd)/build/device  # made by scripts/device/make_kit.sh
M=$B/muster
W=/tmp/ctrcheck; rm -rf $W; mkdir -p $W
exec > >(tee $OUT/report.txt) 2>&1
echo "== machine"; uname -r; nvidia-smi -L 2>&1 | head -3; grep cgroup /proc/self/mounts | head -3; which podman nvidia-ctk
echo "== cgroup tree test"; LD_LIBRARY_PATH=$B/lib $B/agent_unit_test --gtest_filter='CgroupTree*:ContainerCommand*' 2>&1 | tail -15

echo "== podman"
tar -C $W -xJf $B/podman.tar.xz
P=$W/podman
export LD_LIBRARY_PATH=$B/lib:$P/lib
# Podman, conmon and runc each start the next with an environment of their
# own: wrappers bring the carried libraries.
mkdir -p $W/wrap
for b in podman conmon runc; do
  printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$B/lib:$P/lib" "$P/bin/$b" > $W/wrap/$b; chmod +x $W/wrap/$b
done
mkdir -p /etc/containers
[ -e /etc/containers/policy.json ] || echo '{"default":[{"type":"insecureAcceptAnything"}]}' > /etc/containers/policy.json
cat > $W/containers.conf <<CONF
[containers]
default_ulimits = []
[engine]
runtime = "runc"
conmon_path = ["$W/wrap/conmon"]
[engine.runtimes]
runc = ["$W/wrap/runc"]
CONF
export CONTAINERS_CONF=$W/containers.conf
$P/bin/podman --runtime runc version 2>&1 | head -3
IMAGE=localhost/muster-check/gpu:1
tar -C $W/rootfs -c . | $P/bin/podman import - $IMAGE 2>&1 | tail -1
$P/bin/podman --runtime runc run --rm --network host --pull never $IMAGE sh -c 'echo podman-runs' 2>&1 | tail -2

echo "== CDI"
if ! ls /etc/cdi/*.yaml /var/run/cdi/*.yaml >/dev/null 2>&1 && ! command -v nvidia-ctk >/dev/null; then
  mkdir -p /etc/cdi
  smi=$(command -v nvidia-smi); nvml=$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')
  {
    echo 'cdiVersion: "0.5.0"'; echo 'kind: nvidia.com/gpu'; echo 'devices:'
    nvidia-smi --query-gpu=uuid,index --format=csv,noheader | while IFS=', ' read -r uuid index; do
      minor=$(nvidia-smi -q -i "$index" | awk -F': ' '/Minor Number/{print $2; exit}')
      printf -- '- name: %s\n  containerEdits:\n    deviceNodes:\n    - path: /dev/nvidia%s\n' "$uuid" "$minor"
    done
    echo 'containerEdits:'; echo '  deviceNodes:'
    for d in /dev/nvidiactl /dev/nvidia-uvm /dev/nvidia-uvm-tools; do [ -e $d ] && echo "  - path: $d"; done
    echo '  mounts:'
    for f in $smi $(readlink -f $nvml) $nvml; do
      printf '  - hostPath: %s\n    containerPath: %s\n    options: [ro, nosuid, nodev, bind]\n' "$(readlink -f $f)" "$f"
    done
  } > /etc/cdi/nvidia.yaml
  cat /etc/cdi/nvidia.yaml
fi

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
$M agent --name gpu1 --state-dir $W/agent --token-file $W/node.token --start-jitter 0 --stop-tasks-on-exit \
  --podman $W/wrap/podman --containers-conf $W/containers.conf --container-runtime runc > $W/agent.log 2>&1 &
for i in $(seq 100); do $M get nodes 2>/dev/null | grep -q gpu1 && break; sleep 0.2; done
echo "== agent start"; head -3 $W/agent.log
echo "== node"; $M get nodes -o json | grep -A3 -E '"containers|"features|gpuSource|gpuType"'

state() { $M get jobs | awk -v j=$1 '$1==j {print $5}'; }
wait_end() { for i in $(seq 200); do case $(state $1) in COMPLETED|FAILED|OUT_OF_MEMORY|CANCELLED|TIMEOUT) return ;; esac; sleep 0.2; done; }
smidir=$(dirname "$(readlink -f "$(command -v nvidia-smi)")"); nvmldir=$(dirname "$(ldconfig -p | awk '/libnvidia-ml.so.1 /{print $NF; exit}')")
gpu=$($M submit --parsable --gpus 1 --image $IMAGE --env PATH=$smidir:/bin --env LD_LIBRARY_PATH=$nvmldir:/lib/x86_64-linux-gnu \
  -- sh -c 'id; ls /dev/nvidia*; echo CVD=$CUDA_VISIBLE_DEVICES; nvidia-smi -L' 2>&1)
plain=$($M submit --parsable --gpus 1 -- sh -c 'echo CVD=$CUDA_VISIBLE_DEVICES; nvidia-smi -L' 2>&1)
oom=$($M submit --parsable --memory 64Mi --image $IMAGE -- sh -c 'x=a; while true; do x="$x$x"; done' 2>&1)
echo "submitted: gpu $gpu plain $plain oom $oom"
for j in $gpu $plain $oom; do wait_end $j; done
echo "== GPU container job"; $M describe job $gpu | tail -12; $M logs $gpu
echo "== process job"; $M logs $plain
echo "== OOM container job"; $M describe job $oom | tail -6
long=$($M submit --parsable --image $IMAGE -- sleep 300 2>&1)
for i in $(seq 100); do [ "$(state $long)" = RUNNING ] && break; sleep 0.2; done
sleep 1; echo "== running container"; $P/bin/podman ps --format '{{.Names}}'; find /sys/fs/cgroup -name 'libpod-*' -type d | head -3
$M cancel $long; wait_end $long
sleep 2; echo "== after cancel (expect nothing)"; $P/bin/podman ps -a --format '{{.Names}}'; find /sys/fs/cgroup -name 'libpod-*' -type d | head -3
$M get jobs
kill %2 %1 2>/dev/null; wait %1 %2 2>/dev/null
cp $W/*.log $OUT/ 2>/dev/null
