"""strata-bench interleave: all servers of a dataset up at once, windows alternate, failed windows kept."""
import io
import os
import sys
import tempfile
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fakes  # noqa: E402
from bench import report as rp  # noqa: E402
from bench.interleave import Interleave, InterleavedRunner  # noqa: E402
from bench.plan import Plan  # noqa: E402
from bench.report import CsvLog, read_csv  # noqa: E402
from bench.runner import Progress  # noqa: E402
from bench.scenarios import Dataset, scenario  # noqa: E402
from bench.targets import parse_targets  # noqa: E402


class InterleaveTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = Path(self.tmp.name)
        fakes.FakeServer.log = []
        fakes.FakeServer.fail_start = set()
        os.environ["FAKE_SB_TICK"] = "0.002"

    def tearDown(self):
        os.environ.pop("FAKE_SB_TICK", None)
        os.environ.pop("FAKE_SB_MODE", None)
        self.tmp.cleanup()

    def run_plan(self, rounds=3):
        plan = Plan(parse_targets(["fork", "fork:thread_handling=pool-of-threads"], {"fork": 0}),
                    [Dataset("fixed", 2, 100)], [(scenario("read-point"), 8)], seconds=2, warmup=1, settle=0,
                    pool_bytes=1 << 30, rounds=rounds)
        runner = InterleavedRunner(plan, fakes.FakeServer, self.work / "data", self.work / "out", 23506,
                                   sysbench_bin=str(fakes.FAKE_SYSBENCH), progress=Progress(io.StringIO()))
        csv = CsvLog(self.work / "points.csv")
        try:
            return runner, runner.run(csv)
        finally:
            runner.close()
            csv.close()

    def test_servers_run_side_by_side_and_windows_alternate(self):
        runner, results = self.run_plan()
        self.assertEqual([r.target for r in results],
                         ["fork", "fork:thread_handling=pool-of-threads", "fork:thread_handling=pool-of-threads",
                          "fork", "fork", "fork:thread_handling=pool-of-threads"])
        events = [e for e, _ in fakes.FakeServer.log]
        # Each server: start, prepare, restart (flush); then both stay up through every window.
        self.assertEqual(events, ["start", "stop", "start", "start", "stop", "start", "stop", "stop"])
        self.assertEqual(len(read_csv(self.work / "points.csv")), 6)
        targets, groups = rp.grouped(results)
        ps = rp.point_stats(next(iter(groups.values())), targets)
        self.assertEqual(ps.ratio["fork:thread_handling=pool-of-threads"].n, 3)   # one ratio per round

    def test_a_failed_window_is_kept_and_counted(self):
        os.environ["FAKE_SB_MODE"] = "fatal"
        runner, results = self.run_plan(rounds=1)
        self.assertEqual([r.status for r in results], ["failed", "failed"])
        self.assertEqual(len(read_csv(self.work / "points.csv")), 2)
        section = Interleave().sections(runner, self.work / "out")
        self.assertIn("2 of 2 windows failed", section[0])


if __name__ == "__main__":
    unittest.main()
