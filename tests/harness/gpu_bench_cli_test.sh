#!/usr/bin/env bash
# `tide bench gpu` end to end: bad input gets one line and exit 1 on every
# machine; without a CUDA device (or a CUDA build) the command exits 77 with
# "skipped: ..." and so does this test; with one, a small run (4 KiB ..
# 4 MiB, one repetition) writes a document with the GPU named and every
# curve measured.
set -uo pipefail
TIDE=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

out=$("$TIDE" bench gpu --min-size 1KiB 2>&1); rc=$?
[ $rc = 1 ] || fail "--min-size 1KiB: exit $rc ($out)"
echo "$out" | grep -q -- "--min-size must be" || fail "--min-size 1KiB: $out"
[ "$(echo "$out" | wc -l)" = 1 ] || fail "bad input: more than one line: $out"
out=$("$TIDE" bench gpu --repetitions 0 2>&1); rc=$?
[ $rc = 1 ] || fail "--repetitions 0: exit $rc ($out)"

out=$("$TIDE" bench gpu --max-size 4MiB --repetitions 1 --json "$tmp/gpu.json" 2>&1); rc=$?
if [ $rc = 77 ]; then
  echo "$out" | grep -q "skipped: " || fail "exit 77 without a skip line: $out"
  [ ! -e "$tmp/gpu.json" ] || fail "a skipped run left a result file"
  echo "$out" | grep "skipped: " | tail -1 | sed 's/^tide: //'
  exit 77
fi
[ $rc = 0 ] || fail "bench gpu: exit $rc: $out"
python3 - "$tmp/gpu.json" <<'PY' || exit 1
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "tide.bench.gpu/1", d["schema"]
g = d["gpu"]
for k in ("name", "driver_version", "cuda_runtime_version", "compute_capability"):
    assert g[k], k
want = ["d2h_pinned_per_tensor", "d2h_pinned_bucketed", "h2d_pinned_per_tensor",
        "h2d_pinned_bucketed", "d2d", "fp8_quant_64", "fp8_quant_128", "xxh3_checksum"]
for c in want:
    rows = d["curves"][c]
    assert [r["bytes"] for r in rows] == [4096, 16384, 65536, 262144, 1048576, 4194304], (c, rows)
    assert all(r["gbps"] > 0 for r in rows), c
assert all(r["register_seconds"] > 0 for r in d["curves"]["pin_cost_4kib_pages"])
assert [r["bytes"] for r in d["curves"]["pin_cost_thp_2mib"]] == [4194304]  # from 2 MiB up
assert all(r["open_seconds"] > 0 for r in d["curves"]["ipc_open_first_copy"])
assert d["kernel_launch"]["queued_seconds_per_launch"] > 0
print("gpu bench document ok:", g["name"], "driver", g["driver_version"])
PY
