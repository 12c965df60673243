#!/usr/bin/env python3
"""Holds a clean build's CPU seconds (user + sys, from scripts/timed-build.sh)
against results/budgets/build.toml: fails when they grow by more than the
budget's tolerance without the budget being re-recorded with its reason.

It also prints the reference compile (scripts/build-reference.cc) timed on
the same host around the build, against the one recorded with the budget: a
build over its budget on a host whose reference compile is as much slower is
the host, not the tree. The reference is not divided out: one ~5 s compile
varied by 40 % on an idle host, more than the build's own CPU seconds did.

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
if len(fields) not in (3, 4):
    print(f"build budget: FAIL: {build}/.clean-build-time has {len(fields)} fields, "
          "expected wall user sys [reference]; rebuild from clean with make build")
    sys.exit(1)
wall, user, sys_s = (float(x) for x in fields[:3])
cpu = user + sys_s
limit = b["cpu_seconds"] * (1 + b["tolerance_percent"] / 100)
change = cpu / b["cpu_seconds"] - 1
verdict = "ok" if cpu <= limit else "FAIL"
host = ""
if len(fields) == 4 and b.get("reference_seconds"):
    ref = float(fields[3])
    host = (f"; reference compile {ref:.2f} s CPU, recorded {b['reference_seconds']:.2f} s "
            f"({(ref / b['reference_seconds'] - 1) * 100:+.0f} %)")
print(f"build budget: clean build {cpu:.0f} s CPU ({wall:.0f} s wall), budget "
      f"{b['cpu_seconds']:.0f} s +{b['tolerance_percent']:.0f} % = {limit:.0f} s "
      f"({change * 100:+.1f} %){host}: {verdict}")
if verdict != "ok":
    print(f"  re-record it in {budget_path} with the reason (docs/testing.md, Build time)")
    sys.exit(1)
