#!/usr/bin/env python3
"""Holds a clean build's CPU seconds (user + sys, from scripts/timed-build.sh)
against results/budgets/build.toml: fails when they grow by more than the
budget's tolerance without the budget being re-recorded with its reason.
CPU seconds vary less than wall time on a shared host.

  check-build-budget.py BUDGET.toml BUILD_DIR
"""
import sys
import tomllib

budget_path, build = sys.argv[1], sys.argv[2]
with open(budget_path, "rb") as f:
    b = tomllib.load(f)
limit = b["cpu_seconds"] * (1 + b["tolerance_percent"] / 100)
try:
    wall, user, sys_s = (float(x) for x in open(build + "/.clean-build-time").read().split())
except FileNotFoundError:
    print(f"build budget: not checked: {build} was not built from clean here "
          "(a fresh clone's make test times its build)")
    sys.exit(0)
cpu = user + sys_s
change = cpu / b["cpu_seconds"] - 1
verdict = "ok" if cpu <= limit else "FAIL"
print(f"build budget: clean build {cpu:.0f} s CPU ({wall:.0f} s wall), budget "
      f"{b['cpu_seconds']:.0f} s +{b['tolerance_percent']:.0f} % = {limit:.0f} s "
      f"({change * 100:+.1f} %): {verdict}")
if verdict != "ok":
    print(f"  re-record it in {budget_path} with the reason (docs/testing.md, Build time)")
    sys.exit(1)
