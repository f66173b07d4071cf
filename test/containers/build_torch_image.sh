#!/bin/bash
# Builds a container image with Debian's python3-torch and python3-sklearn
# from the files of the Debian packages installed on this machine (their
# dependency closure, as dpkg lists them), for the container DDP test. No
# registry and no network: `podman import` of a tarball of those files.
# The tag is a hash of the packages' versions, so the image is built once
# per machine and again only when a package changes. Prints the image name.
#
# usage: build_torch_image.sh [REPOSITORY]   (default localhost/muster-test/torch)
set -euo pipefail
repo="${1:-localhost/muster-test/torch}"
packages=$(apt-cache depends --recurse --installed --no-recommends --no-suggests --no-conflicts --no-breaks \
  --no-replaces --no-enhances python3-torch python3-sklearn python3 dash 2>/dev/null | grep -v '^ ' | sort -u)
# Only those installed (the closure names virtual and alternative ones too).
packages=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' $packages 2>/dev/null | awk '$1 == "ii" {print $2}' || true)
versions=$(dpkg-query -W -f='${Package}=${Version}\n' $packages | sort)
tag=$(printf '%s\n' "$versions" | sha256sum | cut -c1-16)
image="$repo:$tag"
# One builder at a time: tests that start together would each build it.
exec 9>"/tmp/muster-torch-image.lock"
flock 9
if podman image exists "$image"; then
  echo "$image"
  exit 0
fi
list=$(mktemp)
trap 'rm -f "$list"' EXIT
# Debian 12 merged /bin, /lib, /lib64 and /sbin into /usr: files listed under
# the old paths are stored under /usr, and the old paths are links.
dpkg -L $packages 2>/dev/null | sed -e 's#^/bin/#/usr/bin/#' -e 's#^/sbin/#/usr/sbin/#' -e 's#^/lib/#/usr/lib/#' \
  -e 's#^/lib64/#/usr/lib64/#' | grep -v -e '^/bin$' -e '^/sbin$' -e '^/lib$' -e '^/lib64$' -e '^/\.$' |
  while read -r f; do [ -e "$f" ] || [ -L "$f" ] && echo "${f#/}"; done > "$list"
# What the packages' scripts made: alternatives (libblas.so.3 is one) and
# the loader's cache.
{ find /etc/alternatives -mindepth 1 -maxdepth 1
  find /usr/bin /usr/lib/x86_64-linux-gnu -maxdepth 1 -lname '/etc/alternatives/*'
  echo /etc/ld.so.cache; } | sed 's#^/##' >> "$list"
sort -u -o "$list" "$list"
root=$(mktemp -d)
trap 'rm -rf "$list" "$root"' EXIT
ln -s usr/bin "$root/bin"; ln -s usr/sbin "$root/sbin"; ln -s usr/lib "$root/lib"; ln -s usr/lib64 "$root/lib64"
mkdir -m 1777 "$root/tmp"
tar -C / --no-recursion -cf - -T "$list" | tar -C "$root" -xf -
[ -e "$root/usr/bin/sh" ] || ln -s dash "$root/usr/bin/sh"
tar -C "$root" -cf - . | podman import --quiet --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$image" >/dev/null
echo "$image"
