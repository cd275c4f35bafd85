"""strata-bench cost: /proc parsing, the window between checkpoint and final report, the figures."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import cost  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "oltp_point_select_run.txt"


class Proc(unittest.TestCase):
    def test_process_ticks_with_a_space_in_the_name(self):
        stat = "1234 (my sqld) S 1 2 3 4 5 6 7 8 9 10 250 50 0 0 20 0 40\n"
        self.assertEqual(cost.process_ticks(stat), 300)
        self.assertEqual(cost.process_ticks(""), 0)

    def test_switches_and_machine(self):
        texts = ["voluntary_ctxt_switches:\t10\nnonvoluntary_ctxt_switches:\t2\n",
                 "voluntary_ctxt_switches:\t5\nnonvoluntary_ctxt_switches:\t1\n"]
        self.assertEqual(cost.switches(texts), (15, 3))
        self.assertEqual(cost.machine_ticks("cpu  100 5 50 800 20 1 4 10 0 0\ncpu0 ..."), (170, 820))

    def test_cost_of_a_window(self):
        a = cost.Snapshot(mysqld=0, sysbench=0, busy=0, idle=0, vcs=0, nvcs=0)
        b = cost.Snapshot(mysqld=200, sysbench=100, busy=300, idle=100, vcs=2000, nvcs=500)
        c = cost.cost_of(a, b, queries=10_000, seconds=2.0, hz=100)
        self.assertAlmostEqual(c["mysqld_us_q"], 200.0)      # 2 s of CPU / 10,000 queries
        self.assertAlmostEqual(c["sysbench_us_q"], 100.0)
        self.assertAlmostEqual(c["mysqld_cpus"], 1.0)
        self.assertAlmostEqual(c["busy_pct"], 75.0)
        self.assertAlmostEqual(c["vcs_q"], 0.2)
        self.assertAlmostEqual(c["nvcs_q"], 0.05)


class Window(unittest.TestCase):
    def test_from_the_checkpoint_to_the_final_report(self):
        taken = []
        watch = cost.WindowWatch(lambda: taken.append(len(taken)) or len(taken))
        for i, line in enumerate(FIXTURE.read_text().splitlines()):
            watch.line(line, float(i))
        self.assertEqual(taken, [0, 1])          # two snapshots: not the checkpoint's own "SQL statistics:"
        self.assertIsNotNone(watch.start)
        self.assertGreater(watch.seconds, 0)

    def test_no_checkpoint_no_window(self):
        watch = cost.WindowWatch(lambda: 1)
        watch.line("SQL statistics:", 0.0)
        self.assertIsNone(watch.start)
        self.assertIsNone(watch.seconds)


class Table(unittest.TestCase):
    def test_means_intervals_and_ratio(self):
        def c(seq, target, us):
            return cost.Cost(seq, "read-point", "10x25000 (full)", 16, target, 1000, 5.0, us, 50.0, 1.0, 0.5, 90.0,
                             1.0, 0.1)
        rows = [c(1, "fork", 100.0), c(2, "pool", 90.0), c(3, "pool", 94.0), c(4, "fork", 100.0)]
        table = cost.cost_table(rows)
        self.assertIn("| read-point | 10x25000 | 16 | pool | 2 | 92.0 ± 25.4 |", table)
        self.assertIn("pool / fork mysqld CPU per query 0.920 ± 0.254 (n=2)", table)

    def test_csv_round_trip(self):
        import tempfile
        row = cost.Cost(1, "write", "d", 4, "fork", 10, 1.5, 1.0, 2.0, 0.5, 0.25, 50.0, 0.1, 0.2)
        with tempfile.TemporaryDirectory() as d:
            cost.write_csv(Path(d) / "costs.csv", [row])
            self.assertEqual(cost.read_csv(Path(d) / "costs.csv"), [row])


if __name__ == "__main__":
    unittest.main()
