#!/usr/bin/env bash
# examples/rl_loop.py on the package in the build tree (docs/python.md), as
# `tide reproduce` runs it: tide and the pickle-5 + shared-memory baseline,
# ragged and dense, sync and async.
#   rl-loop.sh BUILD_DIR [rl_loop.py flags, e.g. --json F]
set -euo pipefail
BUILD=${1:?usage: rl-loop.sh BUILD_DIR [flags]}
shift
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
ls "$BUILD"/python/tide/_tide*.so >/dev/null 2>&1 || {
  echo "rl-loop: the Python module is not built in $BUILD (cmake --build $BUILD --target tide_python)" >&2
  exit 1
}
PYTHONPATH="$BUILD/python" exec "$PY" examples/rl_loop.py --compare --mode both "$@"
