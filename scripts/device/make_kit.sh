#!/usr/bin/env bash
# Makes build/device: what the GPU machine needs to run Muster's device
# checks without building there (it may run another distribution): the
# stripped muster binary and agent_unit_test, and the shared libraries
# muster links that such a machine may lack (used through LD_LIBRARY_PATH).
# Then, where a GPU machine is lent: run `bash scripts/device/container_check.sh`
# there, carrying build/device (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=build/device
mkdir -p "$kit/lib"
strip -o "$kit/muster" build/cmd/muster/muster
strip -o "$kit/agent_unit_test" build/src/agent_unit_test
for lib in $(ldd build/cmd/muster/muster | awk '$3 ~ /^\// {print $3}'); do
  case "$(basename "$lib")" in libc.so.*|libm.so.*) continue ;; esac
  cp -L "$lib" "$kit/lib/"
done
du -sh "$kit"
