#!/usr/bin/env bash
# Installs what is needed, builds, and runs Muster's main job: a whole local
# cluster (`muster dev`: a server and 4 agents x 8 fake GPUs on loopback,
# running real processes) with a demo workload, the centrepiece a PyTorch
# DistributedDataParallel job of two replicas (examples/ddp_digits.py).
# At a terminal the cluster stays up after the demo until Ctrl-C; otherwise
# (CI, a pipe) it stops when the demo ends and exits 0 if every job completed.
# Extra arguments go to `muster dev` (see docs/cli.md).
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs: the muster binary and its build's packages (the
# tests' browser, registry, Podman and databases come with scripts/test.sh).
# Built as the test command builds, so that its later build reuses this one.
scripts/install-deps.sh --demo
MUSTER_TARGETS=muster scripts/build.sh -DMUSTER_UNITY=ON -DMUSTER_LINE_TABLES=ON \
  -DMUSTER_BUILD_TESTS=OFF -DMUSTER_BUILD_BENCH=OFF
args=(--demo --dir "${MUSTER_DEV_DIR:-muster-dev}")
if [ ! -t 0 ]; then args+=(--exit-after-demo); fi
exec build/cmd/muster/muster dev "${args[@]}" "$@"
