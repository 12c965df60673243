"""examples/rl_loop.py --compare, small: both transports, ragged and dense,
sync and async, and the weight push run to the end with every push checked
bit-exact, and write the figures docs/python.md reports (the full-size run
is `tide reproduce`'s part rl_loop)."""

import json
import os
import subprocess
import sys

from conftest import SOURCE_DIR


def test_rl_loop_compare_runs_end_to_end(tmp_path):
    out = tmp_path / "rl.json"
    cmd = [sys.executable, os.path.join(SOURCE_DIR, "examples", "rl_loop.py"), "--compare",
           "--mode", "both", "--steps", "2", "--samples", "64", "--prompt-tokens", "64",
           "--corpus-tokens", "100000", "--pool-mb", "8", "--push-mb", "4", "--push-reps", "2",
           "--timeout", "120", "--json", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=dict(os.environ))
    assert r.returncode == 0, r.stdout + r.stderr
    doc = json.loads(out.read_text())
    assert doc["schema"] == "tide.rl_loop/1"
    runs = {(x["transport"], x["layout"], x["mode"]) for x in doc["results"]}
    assert len(runs) == 8, runs
    for x in doc["results"]:
        assert x["weights_bit_exact"] and x["steps"] == 2 and x["rollout_mb_per_step"] > 0, x
        assert (x["transfer_s"] is None) == (x["mode"] == "async"), x
    assert set(doc["ratios"]) == {"sync/ragged", "sync/dense", "async/ragged", "async/dense"}
    push = doc["weight_push"]
    assert [row["transport"] for row in push["rows"]] == ["tide", "baseline"]
    assert all(row["bit_exact"] and row["push_s"] > 0 for row in push["rows"])
    assert "every push bit-exact on every worker" in r.stdout
