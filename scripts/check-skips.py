#!/usr/bin/env python3
"""Counts the skipped tests of a `make test` run and fails on a skip that is
not on the allow-list (tests/skip-allowlist.txt): a skip stands only for a
missing capability. Reads Google Test XML reports (GTEST_OUTPUT=xml:DIR/)
and ctest's JUnit report (--output-junit), whose skipped tests (exit 77)
give their reason on a line starting "skipped:".

    check-skips.py ALLOWLIST RESULTS_DIR
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET


def allow_list(path):
    rules = []
    for line in open(path, encoding="utf-8"):
        pattern = line.split("#", 1)[0].strip()
        if pattern:
            rules.append(re.compile(pattern))
    return rules


def skips(results):
    """(test, reason) of every skipped test case in the reports."""
    out = []
    for path in sorted(glob.glob(os.path.join(results, "*.xml"))):
        try:
            root = ET.parse(path).getroot()
        except ET.ParseError as e:
            out.append((os.path.basename(path), f"unreadable report: {e}"))
            continue
        for case in root.iter("testcase"):
            name = ".".join(p for p in (case.get("classname"), case.get("name")) if p)
            skipped = case.find("skipped")
            if skipped is None and case.get("status") not in ("skipped", "notrun"):
                continue
            reason = (skipped.get("message") if skipped is not None else "") or ""
            # ctest names only the mechanism ("SKIP_RETURN_CODE=77"); the
            # test's own "skipped: <reason>" line is in its output.
            if re.fullmatch(r"SKIP_RETURN_CODE=\d+", reason.strip()):
                reason = ""
            if not reason.strip():
                text = (case.findtext("system-out") or "") + (skipped.text or "" if skipped is not None else "")
                hits = [l for l in text.splitlines() if l.strip().lower().startswith("skipped")]
                reason = hits[-1] if hits else text.strip()[-200:]
            lines = [l for l in reason.strip().splitlines() if l.strip()]
            out.append((name, lines[-1].strip() if lines else ""))
    return out


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    rules = allow_list(sys.argv[1])
    found = skips(sys.argv[2])
    bad = [(t, r) for t, r in found if not any(rule.search(r) for rule in rules)]
    reasons = {}
    for _, r in found:
        reasons[r] = reasons.get(r, 0) + 1
    print(f"skipped: {len(found)} test(s), {len(found) - len(bad)} allowed")
    for r, n in sorted(reasons.items(), key=lambda x: -x[1]):
        print(f"  {n:4d}  {r}")
    for t, r in bad:
        print(f"NOT ALLOWED: {t}: {r or '(no reason given)'}")
    if bad:
        print(f"check-skips: {len(bad)} skip(s) without an allowed reason ({sys.argv[1]})")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
