"""The planner and simulator from Python return the CLI's documents."""

import os

import pytest

import tide


def test_strategies_list_the_table():
    names = {s["name"] for s in tide.strategies()}
    assert {"broadcast", "p2p", "miles-broadcast", "miles-p2p"} <= names


def test_simulate_and_compare_a_scenario(source_dir):
    path = os.path.join(source_dir, "scenarios", "qwen3-30b-small-ep.toml")
    report = tide.simulate(path)
    assert report["schema"] == "tide.sim.report/1"
    for r in report["results"]:
        assert r["seconds"] > 0 and r["seconds"] >= r["lower_bound_seconds"] * 0.999
    one = tide.simulate(path, strategy="miles-p2p")
    assert [r["strategy"] for r in one["results"]] == ["miles-p2p"]
    cmp = tide.compare(path, strategies=["miles-p2p", "miles-broadcast"])
    assert cmp["schema"] == "tide.sim.compare/1" and len(cmp["results"]) == 2
    plan = tide.plan(path, "miles-p2p")
    assert isinstance(plan, dict) and plan


def test_bad_scenario_raises(tmp_path):
    with pytest.raises(tide.Error):
        tide.simulate(str(tmp_path / "missing.toml"))
    bad = tmp_path / "bad.toml"
    bad.write_text("[model]\nname = 42\n")
    with pytest.raises(tide.InvalidArgument):
        tide.scenario(str(bad))
    with pytest.raises(tide.Error):
        tide.simulate(os.path.join(os.path.dirname(__file__), "..", "..", "scenarios",
                                   "qwen3-30b-small-ep.toml"), strategy="no-such-strategy")
