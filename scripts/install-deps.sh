#!/usr/bin/env bash
# Installs what Muster needs to build and test on Debian 12, from Debian's
# packages, and the browser tests' driver from npm. Safe to run again: it
# does nothing when all are present. Arguments name more Debian packages
# (scripts/package.sh: the packaging tools).
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config ccache git python3
  libgtest-dev libgmock-dev libbenchmark-dev
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev nettle-dev uuid-dev
  libpq-dev postgresql-15         # the PostgreSQL store, and the real server its tests start
  munge libmunge-dev              # MUNGE authentication (tests start a munged of their own)
  clang-14 libclang-rt-14-dev     # the libFuzzer targets (scripts/fuzz.sh)
  libcpp-httplib-dev libssl-dev   # TLS (OpenSSL); the tests' and the load generator's HTTP client
  openssl curl                    # the TLS tests' certificates, and a client not our own
  prometheus-cpp-dev prometheus   # /metrics (the library's core part); promtool and a real Prometheus in tests
  python3-torch python3-sklearn   # the PyTorch DDP demo job and its test (/usr/bin/python3)
  chromium nodejs fonts-dejavu-core  # the dashboard's browser tests (playwright-core from npm drives chromium)
  podman runc umoci busybox-static  # container jobs, and the test image built from busybox with umoci
  docker-registry                 # a real registry for the container tests' pulls (started by the tests)
)
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm (a Node.js from elsewhere may bring its own).
command -v npm >/dev/null || missing+=(npm)
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
  echo "installing: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  # The registry package starts a service on port 5000; the tests run their own.
  if [[ " ${missing[*]} " == *" docker-registry "* ]] && command -v systemctl >/dev/null; then
    $SUDO systemctl disable --now docker-registry >/dev/null 2>&1 || true
  fi
fi
# playwright-core for the browser tests, pinned by test/browser/package-lock.json.
browser="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/browser"
if [ ! -d "$browser/node_modules/playwright-core" ]; then
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
