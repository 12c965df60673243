#!/usr/bin/env python3
"""Holds a clean build's CPU seconds (user + sys, from scripts/timed-build.sh)
against results/budgets/build.toml: fails when they grow by more than the
budget's tolerance without the budget being re-recorded with its reason.

The budget is in units of the reference compile (scripts/build-reference.cc)
timed on the same host just before the build: the same tree measured 2,044
and 2,327 CPU s on hosts of different speed, a spread as wide as the
tolerance, while the ratio moves with the tree only.

  check-build-budget.py BUDGET.toml BUILD_DIR
"""
import sys
import tomllib

budget_path, build = sys.argv[1], sys.argv[2]
with open(budget_path, "rb") as f:
    b = tomllib.load(f)
try:
    fields = open(build + "/.clean-build-time").read().split()
except FileNotFoundError:
    print(f"build budget: not checked: {build} was not built from clean here "
          "(a fresh clone's make test times its build)")
    sys.exit(0)
if len(fields) != 4:
    print(f"build budget: FAIL: {build}/.clean-build-time has {len(fields)} fields, "
          "expected 4 (wall user sys reference); rebuild from clean with make build")
    sys.exit(1)
wall, user, sys_s, ref = (float(x) for x in fields)
if ref <= 0:
    print(f"build budget: FAIL: the reference compile took {ref} s")
    sys.exit(1)
cpu = user + sys_s
units = cpu / ref
limit = b["reference_units"] * (1 + b["tolerance_percent"] / 100)
change = units / b["reference_units"] - 1
verdict = "ok" if units <= limit else "FAIL"
print(f"build budget: clean build {cpu:.0f} s CPU ({wall:.0f} s wall) = {units:.1f} x the "
      f"reference compile ({ref:.2f} s CPU); budget {b['reference_units']:.1f} "
      f"+{b['tolerance_percent']:.0f} % = {limit:.1f} ({change * 100:+.1f} %): {verdict}")
if verdict != "ok":
    print(f"  re-record it in {budget_path} with the reason (docs/testing.md, Build time)")
    sys.exit(1)
