#!/bin/bash
# Builds a small container image from Debian's static busybox with umoci
# (an OCI layout: no registry, no network) and stores it in Podman's
# storage, for the container tests and benchmarks; prints its name. The tag
# is a hash of the busybox binary, so it is built once per machine. Podman
# reads CONTAINERS_CONF from the environment.
#
# usage: build_busybox_image.sh [REPOSITORY]   (default localhost/muster-test/busybox)
set -euo pipefail
name="${1:-localhost/muster-test/busybox}:$(sha256sum /bin/busybox | cut -c1-16)"
# One builder at a time: tests that start together would each build it.
exec 9>"/tmp/muster-busybox-image.lock"
flock 9
if podman image exists "$name"; then
  echo "$name"
  exit 0
fi
# Lower case: `podman pull oci:DIR` names the image after DIR.
work="/tmp/muster-image-$$"
rm -rf "$work" && mkdir -p "$work"
trap 'rm -rf "$work"' EXIT
layout="$work/oci" bundle="$work/bundle"
{
umoci init --layout "$layout"
umoci new --image "$layout:latest"
umoci unpack --image "$layout:latest" "$bundle"
mkdir -p "$bundle/rootfs/bin" "$bundle/rootfs/tmp"
chmod 1777 "$bundle/rootfs/tmp"
cp /bin/busybox "$bundle/rootfs/bin/"
for applet in $(/bin/busybox --list); do
  [ "$applet" = busybox ] || ln -sf busybox "$bundle/rootfs/bin/$applet"
done
umoci repack --image "$layout:latest" "$bundle"
umoci config --image "$layout:latest" --config.cmd /bin/sh --config.env PATH=/bin
} >/dev/null
id=$(podman pull -q "oci:$layout:latest")
podman untag "$id"  # the name `oci:` gave it
podman tag "$id" "$name"
echo "$name"
