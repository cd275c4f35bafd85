#!/usr/bin/env python3
"""The verdict on one ctest run, from its JUnit file (ctest --output-junit).

Every ctest test here is ours (the components' GoogleTest cases, one ctest
test each; the script and python tool tests), so the rule is the one
mtr_verdict.py applies to our mtr suites: a skip is a failure unless the test
is on the skip allow-list, where each entry says why it cannot run on a CI
machine. A test ctest did not run for another reason (disabled, a missing
executable) fails too.

Prints one line per test that did not pass, then "counts: P passed, F failed,
S skipped"; exit status 0 if nothing failed, 1 otherwise, 2 on bad input.
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from mtr_verdict import read_list  # noqa: E402


def skip_reason(case):
    """What the test said about its skip: GoogleTest's message after "Skipped",
    unittest's "skipped '...'" lines, else ctest's own message."""
    out = (case.findtext("system-out") or "").splitlines()
    for i, line in enumerate(out):
        if line.rstrip().endswith(": Skipped") and i + 1 < len(out):
            return out[i + 1].strip()
    said = [line.split("skipped", 1)[1].strip() for line in out if " ... skipped " in line]
    if said:
        return "; ".join(said)
    node = case.find("skipped")
    return (node.get("message") if node is not None else "") or "no reason given"


def judge(root, skips_allowed):
    """[(verdict, name, why)] for every test case in the JUnit tree."""
    verdicts = []
    for case in root.iter("testcase"):
        name, status = case.get("name"), case.get("status")
        if status == "run" and case.find("failure") is None:
            verdicts.append(("passed", name, ""))
        elif status == "notrun" and case.find("skipped") is not None:
            why = f"skipped: {skip_reason(case)}"
            if name in skips_allowed:
                verdicts.append(("skipped", name, f"{why} (allowed: {skips_allowed[name]})"))
            else:
                verdicts.append(("failed", name, f"{why} (a test of ours may skip only if on the allow-list)"))
        else:
            node = case.find("failure")
            message = node.get("message") if node is not None else ""
            verdicts.append(("failed", name, f"status {status}" + (f": {message}" if message else "")))
    return verdicts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("junit", help="the file ctest --output-junit wrote")
    p.add_argument("--skips-allowed", help="list file: tests that may skip, each with why")
    a = p.parse_args(argv)
    try:
        root = ET.parse(a.junit).getroot()
        skips_allowed = read_list(a.skips_allowed, 2)
    except (OSError, ValueError, ET.ParseError) as e:
        print(f"ctest_verdict: {e}", file=sys.stderr)
        return 2
    verdicts = judge(root, skips_allowed)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for verdict, name, why in verdicts:
        counts[verdict] += 1
        if verdict != "passed":
            print(f"== ctest: {verdict}: {name}: {why}")
    if not verdicts:
        print("== ctest: ran no test")
        counts["failed"] += 1
    print(f"counts: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


if __name__ == "__main__":
    sys.exit(main())
