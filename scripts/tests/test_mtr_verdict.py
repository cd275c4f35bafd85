"""Tests of mtr_verdict.py and ctest_verdict.py on output of the shapes mysql-test-run and ctest print."""
import io
import os
import sys
import tempfile
import unittest
from contextlib import redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ctest_verdict  # noqa: E402
import mtr_verdict  # noqa: E402

LOG = """\
==============================================================================
                  TEST NAME                       RESULT  TIME (ms) COMMENT
------------------------------------------------------------------------------
[  8%] main.1st                                 w1  [ pass ]     12
[ 16%] strata_audit.syslog                      w2  [ skipped ]  A system logger owns /dev/log
[ 25%] main.select_all                          w1  [ fail ]
        Test ended at 2026-11-27 05:00:00
[ 25%] main.select_all                          w1  [ retry-pass ]   2201
[ 33%] innodb.foo                               w2  [ skipped ]  Test needs debug binaries
[ 41%] strata_sync.churn 'row'                  w1  [ pass ]   5000
[ 50%] strata_sync.churn 'mix'                  w2  [ fail ]  timeout after 900 seconds
[ 50%] strata_sync.churn 'mix'                  w2  [ retry-fail ]  timeout after 900 seconds
[ 58%] strata.redo                                  [ fail ]  Found warnings/errors in server log file!
[ 58%] strata.redo                                  [ retry-pass ]   120
[ 66%] rdma.device                              w1  [ skipped ]  no RDMA device
worker[2] [ 70%] main.opt                       w2  [ opt-pass ]  12
[ 75%] main.noskip                              w1  [ noskip-fail ]
[100%] shutdown_report                              [ pass ]
"""


def run(log, expected=(), ours=(), skips_allowed="", flaky=""):
    with tempfile.TemporaryDirectory() as d:
        def write(name, text):
            path = os.path.join(d, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            return path
        args = [write("mtr.log", log),
                "--expected", write("expected", "\n".join(expected) + "\n"),
                "--ours", write("ours", "\n".join(ours) + "\n"),
                "--skips-allowed", write("skips", skips_allowed),
                "--flaky", write("flaky", flaky)]
        out = io.StringIO()
        with redirect_stdout(out):
            rc = mtr_verdict.main(args)
        return rc, out.getvalue()


class Verdicts(unittest.TestCase):
    def test_every_result_shape_is_read(self):
        outcomes = mtr_verdict.parse_log(LOG)
        self.assertEqual(outcomes["main.1st"].statuses, ["pass"])
        self.assertEqual(outcomes["main.select_all"].statuses, ["fail", "retry-pass"])
        self.assertEqual(outcomes["strata_sync.churn 'mix'"].statuses, ["fail", "retry-fail"])
        self.assertEqual(outcomes["strata_audit.syslog"].reason, "A system logger owns /dev/log")
        self.assertNotIn("shutdown_report", outcomes)
        self.assertEqual(outcomes["main.opt"].statuses, ["pass"])
        self.assertEqual(outcomes["main.noskip"].statuses, ["fail"])
        self.assertNotIn("Retrying test main.select_all, attempt(2/2).", outcomes)

    def test_a_retry_pass_off_the_flaky_list_fails(self):
        rc, out = run(LOG)
        self.assertEqual(rc, 1)
        self.assertIn("failed: main.select_all: passed only on retry", out)
        self.assertIn("failed: strata.redo: passed only on retry", out)

    def test_a_retry_pass_on_the_flaky_list_is_named_and_counted_passed(self):
        rc, out = run("[ 25%] main.select_all  w1  [ fail ]\n[ 25%] main.select_all  w1  [ retry-pass ]  1\n",
                      flaky="main.select_all  2026-11-24  EXPLAIN estimate moves under load\n")
        self.assertEqual(rc, 0)
        self.assertIn("flaky: main.select_all", out)
        self.assertIn("counts: 1 passed, 0 failed, 0 skipped", out)

    def test_a_skip_of_ours_fails_unless_allowed(self):
        rc, out = run(LOG, ours=["strata_audit.syslog", "rdma.device"],
                      skips_allowed="rdma.device  no RDMA NIC on CI machines\n",
                      flaky="main.select_all 2026-11-24 x\nstrata.redo 2026-11-24 y\n")
        self.assertIn("failed: strata_audit.syslog: skipped: A system logger owns /dev/log", out)
        self.assertIn("skipped: rdma.device: skipped: no RDMA device (allowed: no RDMA NIC on CI machines)", out)
        self.assertEqual(rc, 1)

    def test_upstream_skips_are_named_with_the_reason(self):
        rc, out = run(LOG, flaky="main.select_all 2026-11-24 x\nstrata.redo 2026-11-24 y\n")
        self.assertIn("skipped: innodb.foo: skipped: Test needs debug binaries", out)

    def test_a_failing_combination_fails_the_test(self):
        rc, out = run(LOG)
        self.assertIn("failed: strata_sync.churn 'mix': timeout after 900 seconds", out)
        self.assertIn("counts: 3 passed, 4 failed, 3 skipped", out)

    def test_a_test_that_never_reported_fails(self):
        rc, out = run("[ 50%] main.1st  [ pass ]  3\n", expected=["main.1st", "main.create"])
        self.assertEqual(rc, 1)
        self.assertIn("failed: main.create: asked for but never reported by mtr", out)

    def test_an_empty_log_fails(self):
        rc, out = run("mysql-test-run: *** ERROR: Could not find 'mysqld'\n")
        self.assertEqual(rc, 1)
        self.assertIn("mtr reported no test at all", out)

    def test_list_entries_must_say_why(self):
        rc, _ = run(LOG, skips_allowed="rdma.device\n")
        self.assertEqual(rc, 2)
        rc, _ = run(LOG, flaky="main.select_all  flaky under load\n")
        self.assertEqual(rc, 2)


JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="top" tests="5" failures="1" disabled="0" skipped="2">
  <testcase name="Frames.RoundTrip" classname="Frames.RoundTrip" time="0.1" status="run"><system-out></system-out></testcase>
  <testcase name="Quorum.Ties" classname="Quorum.Ties" time="0.1" status="fail"><failure message=""/></testcase>
  <testcase name="VerbsDevice.LoopbackEchoOverRdma" classname="x" time="0" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>rdma/tests/verbs_device_test.cc:25: Skipped
no RDMA device on this machine
[  SKIPPED ] VerbsDevice.LoopbackEchoOverRdma (0 ms)</system-out>
  </testcase>
  <testcase name="scripts.bench" classname="scripts.bench" time="2" status="notrun">
    <skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>test_ulimit (test_client_machine.Remote.test_ulimit) ... skipped 'hard open files limit 1024'
OK (skipped=1)</system-out>
  </testcase>
  <testcase name="Realtime.Policy" classname="x" time="0" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>x.cc:30: Skipped
realtime policies not permitted here</system-out></testcase>
</testsuite>
"""


class CtestVerdicts(unittest.TestCase):
    def run_verdict(self, junit, skips_allowed=""):
        with tempfile.TemporaryDirectory() as d:
            j, s = os.path.join(d, "j.xml"), os.path.join(d, "skips")
            with open(j, "w", encoding="utf-8") as f:
                f.write(junit)
            with open(s, "w", encoding="utf-8") as f:
                f.write(skips_allowed)
            out = io.StringIO()
            with redirect_stdout(out):
                rc = ctest_verdict.main([j, "--skips-allowed", s])
            return rc, out.getvalue()

    def test_skips_fail_unless_allowed_and_say_why(self):
        rc, out = self.run_verdict(JUNIT, "VerbsDevice.LoopbackEchoOverRdma  no RDMA device on CI machines\n")
        self.assertEqual(rc, 1)
        self.assertIn("skipped: VerbsDevice.LoopbackEchoOverRdma: skipped: no RDMA device on this machine (allowed:", out)
        self.assertIn("failed: Realtime.Policy: skipped: realtime policies not permitted here", out)
        self.assertIn("failed: scripts.bench: skipped: 'hard open files limit 1024'", out)
        self.assertIn("failed: Quorum.Ties: status fail", out)
        self.assertIn("counts: 1 passed, 3 failed, 1 skipped", out)

    def test_all_passing_passes(self):
        rc, out = self.run_verdict('<testsuite><testcase name="a" status="run"/></testsuite>')
        self.assertEqual((rc, out.strip()), (0, "counts: 1 passed, 0 failed, 0 skipped"))

    def test_no_test_fails(self):
        rc, out = self.run_verdict("<testsuite></testsuite>")
        self.assertEqual(rc, 1)


if __name__ == "__main__":
    unittest.main()
