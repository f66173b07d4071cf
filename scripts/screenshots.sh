#!/usr/bin/env bash
# Saves each page of the dashboard as docs/screenshots/*.png, from the
# browser test's cluster (test/browser/dashboard.test.mjs). Build first
# (scripts/build.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
MUSTER_BINARY="${MUSTER_BINARY:-build/cmd/muster/muster}" MUSTER_SCREENSHOTS=docs/screenshots \
  node --test test/browser/dashboard.test.mjs
