#!/usr/bin/env bash
# `make reproduce`: the quick reproduction set (tide reproduce --quick, under
# 15 minutes on 2 cores). Output: results/local/<UTC time>/ with REPORT.md,
# summary.json, results.h5 and the figures. The full set: docs/reproduce.md.
#   reproduce.sh [BUILD_DIR] [extra tide reproduce flags, e.g. --out DIR]
set -euo pipefail
BUILD=${1:-build}
shift || true
cd "$(dirname "$0")/.."
TIDE="$BUILD/tide"
[ -x "$TIDE" ] || { echo "reproduce: $TIDE not built (run make build)" >&2; exit 1; }
exec "$TIDE" reproduce --quick "$@"
