#!/usr/bin/env bash
# `tide ab`: two "builds" whose benchmark (a script writing Google Benchmark
# JSON) differs by 30 %: flagged, exit 1, runs interleaved A B B A ...; the
# same build on both sides: no regression; a real tide sync run on both
# sides writes the JSON with its context; bad input is one line, exit 1.
set -u
TIDE=$1
BUILD=$2
PY=/usr/bin/python3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# fake BUILD_DIR NAME MS: a benchmark of MS ms (+0..2 % jitter) that logs its turn.
fake() {
  mkdir -p "$1/bench"
  cat > "$1/bench/fake" <<EOF
#!/usr/bin/env bash
echo -n $2 >> "$dir/order"
for a in "\$@"; do case \$a in --benchmark_out=*) out=\${a#--benchmark_out=} ;; esac; done
t=\$(awk -v s=\$RANDOM 'BEGIN { printf "%.3f", $3 * (1 + (s % 200) / 10000) }')
printf '{"context": {}, "benchmarks": [{"name": "BM_Fake", "run_name": "BM_Fake",
  "run_type": "iteration", "real_time": %s, "time_unit": "ms"}]}\n' "\$t" > "\$out"
EOF
  chmod +x "$1/bench/fake"
}
fake "$dir/a" a 100
fake "$dir/b" b 130

"$TIDE" ab --base "$dir/a" --new "$dir/b" --repetitions 5 --json "$dir/ab.json" -- bench/fake \
    > "$dir/out" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$dir/out"; fail "30 % slower: exit $rc, want 1"; }
[ "$(cat "$dir/order")" = abbaabbaab ] || fail "runs not interleaved: $(cat "$dir/order")"
"$PY" - "$dir/ab.json" <<'PYEOF' || { cat "$dir/out"; fail "ab JSON"; }
import json, sys
j = json.load(open(sys.argv[1]))
assert j["schema"] == "tide.ab/1" and j["repetitions"] == 5
assert "git_revision" in j["context"] and "load_average" in j["context"]
[m] = j["metrics"]
assert m["name"] == "BM_Fake/real_time" and m["verdict"] == "REGRESSED", m
assert 25 < m["change_percent"] < 35 and m["p_value"] < 0.05 and m["samples"] == 5, m
PYEOF
echo "ok: a 30 % slower build is flagged (interleaved A B B A ...)"

rm -f "$dir/order"
"$TIDE" ab --base "$dir/b" --new "$dir/b" --repetitions 5 -- bench/fake > "$dir/out" 2>&1 \
    || { cat "$dir/out"; fail "same build flagged"; }
grep -q '^0 significant regression' "$dir/out" || { cat "$dir/out"; fail "same build: summary"; }
echo "ok: the same build on both sides is no regression"

# A real benchmark: tide sync's per-step samples ({out} is the result file).
tide_dir=$(dirname "$TIDE")
"$TIDE" ab --base "$tide_dir" --new "$BUILD" --repetitions 3 --no-fail --json "$dir/sync.json" \
    -- "$(basename "$TIDE")" sync --model tiny-moe --train tp=2,pp=2,ep=2 \
    --infer engines=2,tp=2,ep=2 --cluster h100-ib-8x400:nodes=2 --bucket 64KiB --chunk 16KiB \
    --streams 1 --steps 3 --json '{out}' > "$dir/out" 2>&1 || { cat "$dir/out"; fail "tide sync A/B"; }
"$PY" - "$dir/sync.json" <<'PYEOF' || { cat "$dir/out"; fail "sync A/B JSON"; }
import json, sys
j = json.load(open(sys.argv[1]))
names = [m["name"] for m in j["metrics"]]
assert "step_seconds" in names, names
m = j["metrics"][names.index("step_seconds")]
assert m["samples"] == 9 and m["base_median"] > 0 and m["new_median"] > 0, m
PYEOF
echo "ok: tide sync A/B, 3 interleaved runs a side"

for args in "--base $dir/a --new $dir/b --" "--base $dir/a --new $dir/b -- bench/none" \
            "--base $dir/a --new $dir/b --repetitions 1 -- bench/fake"; do
  # shellcheck disable=SC2086
  "$TIDE" ab $args > "$dir/out" 2>&1
  rc=$?
  [ $rc -ne 0 ] || { cat "$dir/out"; fail "bad input '$args' accepted"; }
  [ "$(wc -l < "$dir/out")" -eq 1 ] || { cat "$dir/out"; fail "bad input '$args': not one line"; }
done
echo "PASS"
