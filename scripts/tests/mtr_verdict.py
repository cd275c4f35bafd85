#!/usr/bin/env python3
"""The verdict on one mysql-test-run log: what passed, failed and skipped, by name.

scripts/test runs mtr several times (our suites, upstream smoke tests, the
upstream innodb selection on the log service) and must not be able to say
"passed" for a test that did not run or did not pass. mtr's own summary is
not enough for that: a test that fails and then passes on mtr's retry counts
as passed there, a skipped test is not a failure there, and a test that never
reported (mtr died, a worker hung) is not mentioned at all. So every test
asked for gets a verdict from its own report lines:

  passed    a "[ pass ]" on the first attempt, no failure
  flaky     failed, then passed on retry, and on the flaky list: counted as
            passed, printed by name
  failed    any attempt failed and no retry passed; or passed only on retry
            and not on the flaky list; or skipped although it is one of ours
            and not on the skip allow-list; or no report line at all
  skipped   mtr skipped or disabled it (upstream tests, or ours on the
            allow-list): printed by name with mtr's reason

The lists are plain files: "suite.test  reason" per line (the flaky list:
"suite.test  YYYY-MM-DD  reason"), "#" starts a comment. An entry without a
reason is refused: a list whose entries do not say why is how failures hide.

Output: one line per non-passed test, then "counts: P passed, F failed,
S skipped"; exit status 0 if nothing failed, 1 otherwise, 2 on bad input.
"""
import argparse
import re
import sys
from dataclasses import dataclass, field

# "[ 42%] suite.name 'combination'   w2 [ retry-pass ]   1234"
# (progress, combination and worker are optional, and mtr may put a worker
# name or a timestamp first; the rest of the line is the time for a pass,
# mtr's reason for a skip, a message for a failure). mtr's statuses
# (lib/mtr_report.pm): pass, opt-pass, fail, skipped, disabled, with
# "retry-" on a retried attempt and "noskip-" on a failure of a test that
# --no-skip made run.
RESULT_LINE = re.compile(
    r"(?:^|\s|\])(?P<name>[\w-]+\.[\w-]+)(?:\s+'(?P<combo>[^']*)')?\s+(?:w\d+\s+)?"
    r"\[\s*(?:noskip-)?(?P<status>(?:retry-)?(?:pass|opt-pass|fail)|skipped|disabled)\s*\]\s*(?P<rest>.*)$")


@dataclass
class Outcome:
    statuses: list = field(default_factory=list)
    reason: str = ""


def read_list(path, fields):
    """{test: reason} from a list file; 'fields' is 2 (test, reason) or 3 (test, date, reason)."""
    entries = {}
    if not path:
        return entries
    with open(path, encoding="utf-8") as f:
        for number, line in enumerate(f, 1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split(None, fields - 1)
            if len(parts) < fields:
                raise ValueError(f"{path}:{number}: '{line}' needs {'a date and ' if fields == 3 else ''}a reason")
            if fields == 3 and not re.fullmatch(r"\d{4}-\d\d-\d\d", parts[1]):
                raise ValueError(f"{path}:{number}: '{parts[1]}' is not a date (YYYY-MM-DD)")
            entries[parts[0]] = parts[-1]
    return entries


def parse_log(text):
    """{test name (with 'combination' if any): Outcome} in the order mtr reported them."""
    outcomes = {}
    for line in text.splitlines():
        m = RESULT_LINE.search(line.strip())
        if not m:
            continue
        name = m["name"] + (f" '{m['combo']}'" if m["combo"] else "")
        outcome = outcomes.setdefault(name, Outcome())
        outcome.statuses.append(m["status"].replace("opt-pass", "pass"))
        if m["status"] in ("skipped", "disabled", "fail", "retry-fail") and m["rest"].strip():
            outcome.reason = m["rest"].strip()
    return outcomes


def base_name(name):
    return name.split(" ", 1)[0]


def judge(outcomes, expected, ours, skips_allowed, flaky):
    """[(verdict, name, why)] for every test reported or expected."""
    verdicts = []
    for name, o in outcomes.items():
        test = base_name(name)
        s = o.statuses
        failed_once = "fail" in s or "retry-fail" in s
        if "pass" in s and not failed_once:
            verdicts.append(("passed", name, ""))
        elif "retry-pass" in s and "retry-fail" not in s:
            if test in flaky:
                verdicts.append(("flaky", name, f"failed, then passed on retry; on the flaky list: {flaky[test]}"))
            else:
                verdicts.append(("failed", name, "passed only on retry and is not on the flaky list"))
        elif failed_once:
            verdicts.append(("failed", name, o.reason or "failed"))
        elif "skipped" in s or "disabled" in s:
            why = f"{'disabled' if 'disabled' in s else 'skipped'}: {o.reason or 'mtr gave no reason'}"
            if test in ours and test not in skips_allowed:
                verdicts.append(("failed", name, f"{why} (a test of ours may skip only if on the allow-list)"))
            elif test in skips_allowed:
                verdicts.append(("skipped", name, f"{why} (allowed: {skips_allowed[test]})"))
            else:
                verdicts.append(("skipped", name, why))
        else:
            verdicts.append(("failed", name, f"unrecognised results {s}"))
    reported = {base_name(n) for n in outcomes}
    for test in expected:
        if test not in reported:
            verdicts.append(("failed", test, "asked for but never reported by mtr (did not run)"))
    return verdicts


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("log", help="mysql-test-run's output")
    p.add_argument("--expected", help="file: the tests asked for, one a line")
    p.add_argument("--ours", help="file: tests of ours, one a line (a skip fails them)")
    p.add_argument("--skips-allowed", help="list file: tests of ours that may skip, each with why")
    p.add_argument("--flaky", help="list file: tests whose retry-pass counts, each with date and why")
    p.add_argument("--label", default="mysql-test-run", help="what this run was, for the output")
    a = p.parse_args(argv)
    try:
        with open(a.log, encoding="utf-8", errors="replace") as f:
            log = f.read()
        expected = list(read_list_names(a.expected))
        ours = set(read_list_names(a.ours))
        skips_allowed = read_list(a.skips_allowed, 2)
        flaky = read_list(a.flaky, 3)
    except (OSError, ValueError) as e:
        print(f"mtr_verdict: {e}", file=sys.stderr)
        return 2

    verdicts = judge(parse_log(log), expected, ours, skips_allowed, flaky)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for verdict, name, why in verdicts:
        counts["passed" if verdict == "flaky" else verdict] += 1
        if verdict != "passed":
            print(f"== {a.label}: {verdict}: {name}: {why}")
    if not verdicts:
        print(f"== {a.label}: mtr reported no test at all")
        counts["failed"] += 1
    print(f"counts: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    return 1 if counts["failed"] else 0


def read_list_names(path):
    """The first word of each line of a file, comments and blank lines skipped."""
    if not path:
        return []
    names = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            words = line.split("#", 1)[0].split()
            if words:
                names.append(words[0])
    return names


if __name__ == "__main__":
    sys.exit(main())
