#!/usr/bin/env bash
# Installs what Muster needs to build and test on Debian 12, from Debian's
# packages, and the browser tests' driver from npm. Safe to run again: it
# does nothing when all are present.
#   scripts/install-deps.sh            everything: the build, the tests, the benchmarks
#   scripts/install-deps.sh --demo     only what building `muster` and its demo need (scripts/demo.sh)
#   scripts/install-deps.sh PKG...     everything, and more Debian packages (scripts/package.sh)
set -euo pipefail
# Building the muster binary, and the demo's training job.
packages=(
  build-essential cmake ninja-build pkg-config ccache git python3
  nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libfmt-dev libspdlog-dev
  libsqlite3-dev nettle-dev uuid-dev
  libpq-dev                       # the PostgreSQL store's client library
  libmunge-dev                    # MUNGE authentication
  libcpp-httplib-dev libssl-dev   # TLS (OpenSSL); the HTTP client of tests and the load generator (headers)
  prometheus-cpp-dev              # /metrics (the library's core part)
  python3-torch python3-sklearn   # the PyTorch DDP demo job and its test (/usr/bin/python3)
)
demo=false
if [ "${1:-}" = "--demo" ]; then
  demo=true
  shift
fi
if ! $demo; then
  # The tests, the benchmarks and the fuzz targets, and the real services
  # and tools they start.
  packages+=(
    libgtest-dev libgmock-dev libbenchmark-dev
    postgresql-15                   # the real PostgreSQL server the store's tests start
    munge                           # munged (tests start one of their own)
    clang-14 libclang-rt-14-dev     # the sanitizer build and the libFuzzer targets (scripts/fuzz.sh)
    python3-clang-14                # scripts/check_class_size.py: classes' sizes as clang counts them
    clang-tidy-14 clang-format-14   # scripts/tidy.sh on changed files; .clang-format
    openssl curl                    # the TLS tests' certificates, and a client not our own
    prometheus                      # promtool and a real Prometheus in tests
    chromium nodejs fonts-dejavu-core  # the dashboard's browser tests (playwright-core from npm drives chromium)
    podman runc umoci busybox-static  # container jobs, and the test image built from busybox with umoci
    docker-registry                 # a real registry for the container tests' pulls (started by the tests)
  )
fi
packages+=("$@")
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Debian's nodejs comes without npm (a Node.js from elsewhere may bring its own).
$demo || command -v npm >/dev/null || missing+=(npm)
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
$demo && exit 0
# playwright-core for the browser tests, pinned by test/browser/package-lock.json.
browser="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/test/browser"
if [ ! -d "$browser/node_modules/playwright-core" ]; then
  (cd "$browser" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
