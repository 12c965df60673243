#!/usr/bin/env bash
# `tide bench transport` and `tide launch` end to end: bad input gives one
# line and a non-zero exit; a small run writes a valid result document.
set -uo pipefail
TIDE=$1
PY=/usr/bin/python3
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

expect_error() {  # expect_error <substring> <args...>
  local want=$1; shift
  "$TIDE" "$@" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  local lines
  lines=$(wc -l <"$tmp/err")
  if [ $rc -eq 0 ] || [ "$lines" -ne 1 ] || ! grep -q -- "$want" "$tmp/err"; then
    echo "FAIL: tide $* -> rc=$rc, stderr ($lines lines):"; cat "$tmp/err"
    fails=$((fails + 1))
  fi
}

B="bench transport"
expect_error "unknown backend 'carrier-pigeon'" $B --backend carrier-pigeon --size 1MiB --block 64KiB
expect_error "unknown size unit" $B --backend shm --size 12XB --block 4KiB
expect_error "non-negative" $B --backend shm --size 1MiB --block 64KiB --streams -3
expect_error "non-negative" $B --backend shm --size -1MiB --block 64KiB
expect_error "larger than --size" $B --backend shm --size 1MiB --block 2MiB
expect_error "--repetitions must be" $B --backend shm --size 1MiB --block 64KiB --repetitions 0
expect_error "cannot write --json" $B --backend shm --size 1MiB --block 64KiB --json /nonexistent/dir/x.json
expect_error "-n must be" launch -n 0 -- true
expect_error "cannot start" launch -n 1 -- /nonexistent/program

check_doc() {  # check_doc <file> <backend>
  $PY - "$1" "$2" <<'PYEOF' || { echo "FAIL: bad result document $1"; cat "$1"; fails=$((fails + 1)); }
import json, sys
d = json.load(open(sys.argv[1]))
assert d["schema"] == "tide.bench.transport/1", d
assert d["backend"] == sys.argv[2]
assert d["bytes"] == 8 << 20 and d["block"] == 256 << 10 and d["repetitions"] == 3
g = d["gbps"]
assert 0 < g["p5"] <= g["median"] <= g["p95"], g
ref = d["reference"]
if sys.argv[2] == "shm":
    assert ref["name"] == "memcpy" and ref["gbps"]["median"] > 0
    assert ref["threads"] == d["streams"], ref  # like for like: as many copy threads
    assert abs(d["ratio"] - g["median"] / ref["gbps"]["median"]) < 1e-9
if sys.argv[2] == "tcp" and "skipped" not in ref:
    assert ref["name"] == "iperf3" and ref["streams"] == d["streams"], ref  # iperf3 -P <streams>
ctx = d["context"]
for k in ("host", "cpu_model", "cpus", "load_average", "kernel", "compiler", "build_type",
          "git_revision"):
    assert k in ctx, k
PYEOF
}

if "$TIDE" $B --backend shm --size 8MiB --block 256KiB --streams 2 --repetitions 3 \
    --json "$tmp/shm.json" >"$tmp/out" 2>"$tmp/err"; then
  grep -q "memcpy" "$tmp/out" || { echo "FAIL: summary line lacks the reference"; cat "$tmp/out"; fails=$((fails + 1)); }
  check_doc "$tmp/shm.json" shm
else
  echo "FAIL: shm bench run"; cat "$tmp/err"; fails=$((fails + 1))
fi

# Two launched processes instead of two threads.
if "$TIDE" launch -n 2 -- "$TIDE" $B --backend shm --size 8MiB --block 256KiB --streams 2 \
    --repetitions 3 --json "$tmp/shm2.json" >"$tmp/out" 2>"$tmp/err"; then
  grep -q "^\[rank 0\] bench transport shm" "$tmp/out" || { echo "FAIL: launched summary"; cat "$tmp/out"; fails=$((fails + 1)); }
  check_doc "$tmp/shm2.json" shm
else
  echo "FAIL: launched shm bench"; cat "$tmp/out" "$tmp/err"; fails=$((fails + 1))
fi

if "$TIDE" backends | grep -q "^tcp *compiled"; then
  if "$TIDE" $B --backend tcp --size 8MiB --block 256KiB --streams 2 --repetitions 3 \
      --json "$tmp/tcp.json" >"$tmp/out" 2>"$tmp/err"; then
    check_doc "$tmp/tcp.json" tcp
  else
    echo "FAIL: tcp bench run"; cat "$tmp/err"; fails=$((fails + 1))
  fi
fi

# tide bench register: one row per size, pages in the host's page size, and
# one clear error for a bad size or a backend that cannot run here.
if "$TIDE" bench register --backend shm --sizes 4KiB,1MiB --repetitions 2 \
    --json "$tmp/reg.json" >"$tmp/out" 2>"$tmp/err"; then
  python3 - "$tmp/reg.json" "$(getconf PAGESIZE)" <<'PYEOF' || { echo "FAIL: register json"; fails=$((fails + 1)); }
import json, sys
j = json.load(open(sys.argv[1])); page = int(sys.argv[2])
assert j["schema"] == "tide.bench.register/1" and j["page_bytes"] == page, j
assert [r["bytes"] for r in j["sizes"]] == [4096, 1 << 20], j
for r in j["sizes"]:
    assert r["pages"] == -(-r["bytes"] // page), r
    assert r["register_seconds"] > 0 and r["register_seconds_p5"] <= r["register_seconds_p95"], r
    assert abs(r["register_seconds_per_page"] * r["pages"] - r["register_seconds"]) < 1e-12, r
PYEOF
else
  echo "FAIL: register bench run"; cat "$tmp/err"; fails=$((fails + 1))
fi
"$TIDE" bench register --sizes 0 >"$tmp/out" 2>&1 && { echo "FAIL: --sizes 0 accepted"; fails=$((fails + 1)); }
grep -q "a region of 0 bytes" "$tmp/out" || { echo "FAIL: no reason for --sizes 0"; cat "$tmp/out"; fails=$((fails + 1)); }

# A failing rank's exit code comes back through tide launch.
"$TIDE" launch -n 2 -- sh -c 'exit $((TIDE_RANK * 7))' >/dev/null 2>&1
rc=$?
[ $rc -eq 7 ] || { echo "FAIL: launch propagated $rc, want 7"; fails=$((fails + 1)); }

[ $fails -eq 0 ] && echo "bench_cli_test: all passed"
exit $fails
