#!/usr/bin/env bash
# Bad input to `tide trace gen` and `tide rollout`: one error line naming the
# flag, a non-zero exit, and no run (nothing is written).
set -u
TIDE=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

bad() {  # expected-substring command args...
  local want=$1; shift
  "$TIDE" "$@" > "$dir/out" 2>&1 && fail "accepted: $*"
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "not one line: $*"; }
  grep -q -- "$want" "$dir/out" || { cat "$dir/out"; fail "no '$want' for: $*"; }
}

# The trace reader refuses a non-finite lr, so gen must not write one.
gen=(trace gen --model tiny-moe --steps 1 --out "$dir/t.h5")
bad "--lr must be finite and > 0 (got nan)" "${gen[@]}" --lr nan
bad "--lr must be finite and > 0 (got -0.001)" "${gen[@]}" --lr -0.001
bad "--weight-decay must be finite and >= 0 (got -0.1)" "${gen[@]}" --weight-decay -0.1
bad "--tokens-per-step must be > 0 (got 0)" "${gen[@]}" --tokens-per-step 0
bad "--tokens-per-step must be > 0 (got -5)" "${gen[@]}" --tokens-per-step -5
[ -e "$dir/t.h5" ] && fail "a refused trace gen wrote its file"

bad "--no-paths and --no-bus together leave nothing to run" rollout --no-paths --no-bus
bad "--backend foo: not a rollout backend (known: tcp, shm, rdma)" rollout --backend foo
echo "PASS"
