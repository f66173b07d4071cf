#!/usr/bin/env bash
# Makes build/device: what the GPU machine needs to run Muster's device
# checks without building there (it may run another distribution): the
# stripped muster binary and agent_unit_test, and the shared libraries
# muster links that such a machine may lack (used through LD_LIBRARY_PATH);
# and, in podman.tar.xz, Podman and an image root for container jobs.
# Then, where a GPU machine is lent: run `bash scripts/device/container_check.sh`
# there, carrying build/device (docs/testing.md).
set -euo pipefail
cd "$(dirname "$0")/../.."
kit=build/device
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$kit/lib"
strip -o "$kit/muster" build/cmd/muster/muster
strip -o "$kit/agent_unit_test" build/src/agent_unit_test
for lib in $(ldd build/cmd/muster/muster | awk '$3 ~ /^\// {print $3}'); do
  case "$(basename "$lib")" in libc.so.*|libm.so.*) continue ;; esac
  cp -L "$lib" "$kit/lib/"
done
# Podman with its conmon and runc, and the libraries they link (not libc:
# the GPU machine's is newer), compressed to stay within what a run may
# carry; and a small image of busybox with glibc's loader and libraries, so
# that the driver's nvidia-smi, which CDI mounts in, runs in it.
pod="$work/podman"
mkdir -p "$pod/bin" "$pod/lib"
for b in /usr/bin/podman /usr/bin/conmon /usr/sbin/runc; do
  cp -L "$b" "$pod/bin/"
  for lib in $(ldd "$b" | awk '$3 ~ /^\// {print $3}'); do
    case "$(basename "$lib")" in libc.so.*|libm.so.*) continue ;; esac
    cp -L "$lib" "$pod/lib/"
  done
done
rootfs="$work/rootfs"
mkdir -p "$rootfs/bin" "$rootfs/tmp" "$rootfs/lib64" "$rootfs/lib/x86_64-linux-gnu" "$rootfs/usr/bin"
chmod 1777 "$rootfs/tmp"
cp /bin/busybox "$rootfs/bin/"
for applet in $(/bin/busybox --list); do [ "$applet" = busybox ] || ln -sf busybox "$rootfs/bin/$applet"; done
cp -L /lib64/ld-linux-x86-64.so.2 "$rootfs/lib64/"
for lib in libc.so.6 libm.so.6 libdl.so.2 libpthread.so.0 librt.so.1; do
  cp -L "/lib/x86_64-linux-gnu/$lib" "$rootfs/lib/x86_64-linux-gnu/"
done
tar -C "$work" -cJf "$kit/podman.tar.xz" podman rootfs
du -sh "$kit"
