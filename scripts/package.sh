#!/usr/bin/env bash
# Builds the Debian packages muster, muster-server and muster-agent from
# this tree with Debian's own tools (dpkg-buildpackage, debhelper; debian/),
# puts them in build-deb/, and checks them with lintian: any error or
# warning fails. About 15 minutes on 2 cores, most of it compiling.
#
#   scripts/package.sh                 # build-deb/*.deb
#   test/package/install_test.sh       # then: install, start, run a job, purge
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh debhelper dpkg-dev lintian
# debhelper gives the build a HOME of its own; keep the compile cache.
export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
version=$(dpkg-parsechangelog -S Version)
arch=$(dpkg --print-architecture)
dpkg-buildpackage -b -uc -us
out=build-deb
rm -rf "$out"
mkdir -p "$out"
mv ../muster_"$version"_"$arch".deb ../muster-dbgsym_"$version"_"$arch".deb \
   ../muster-server_"$version"_all.deb ../muster-agent_"$version"_all.deb ../muster_"$version"_"$arch".changes ../muster_"$version"_"$arch".buildinfo "$out"/
lintian --fail-on error,warning "$out"/muster_"$version"_"$arch".changes
echo "packages: $(ls "$out"/*.deb | tr '\n' ' ')"
