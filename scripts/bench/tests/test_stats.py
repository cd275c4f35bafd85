"""stats.py: mean and Student's t 95% interval over rounds, the verdict rule, --target-ratio parsing."""
import statistics
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import stats as st  # noqa: E402


class Interval(unittest.TestCase):
    def test_known_values(self):
        iv = st.interval([1.0, 2.0, 3.0])
        self.assertAlmostEqual(iv.mean, 2.0)
        # sd 1, n 3: half = t(2) * 1 / sqrt(3) = 4.303 / 1.732
        self.assertAlmostEqual(iv.half, 4.303 / 3 ** 0.5, places=6)
        self.assertEqual(iv.n, 3)
        self.assertEqual(iv.text(".2f"), "2.00 ± 2.48 (n=3)")

    def test_matches_the_textbook_formula_for_many_rounds(self):
        xs = [0.91, 0.95, 0.97, 0.93, 0.99, 0.96, 0.94, 0.92, 0.98, 0.95, 0.90, 0.97]
        iv = st.interval(xs)
        half = 2.201 * statistics.stdev(xs) / len(xs) ** 0.5   # t(11) = 2.201
        self.assertAlmostEqual(iv.half, half, places=9)
        self.assertAlmostEqual(iv.mean, statistics.fmean(xs), places=12)

    def test_one_sample_none_and_empty(self):
        iv = st.interval([5.0, None])
        self.assertEqual((iv.mean, iv.low, iv.high, iv.n), (5.0, 5.0, 5.0, 1))
        self.assertEqual(iv.text(".1f"), "5.0 (n=1)")
        self.assertIsNone(st.interval([]))
        self.assertIsNone(st.interval([None]))

    def test_t_quantiles(self):
        self.assertEqual(st.t95(1), 12.706)
        self.assertEqual(st.t95(30), 2.042)
        self.assertAlmostEqual(st.t95(40), 2.021, places=3)
        self.assertAlmostEqual(st.t95(120), 1.980, places=3)
        self.assertGreater(st.t95(31), st.Z975)
        for df in range(1, 200):
            self.assertGreaterEqual(st.t95(df), st.t95(df + 1))   # shrinks towards the normal quantile
        with self.assertRaises(ValueError):
            st.t95(0)


class Verdict(unittest.TestCase):
    def test_higher_is_better(self):
        self.assertEqual(st.verdict(st.Interval(0.9, 0.85, 0.95, 3), 0.8), st.MET)
        self.assertEqual(st.verdict(st.Interval(0.9, 0.80, 1.00, 3), 0.8), st.MET)      # the edge counts
        self.assertEqual(st.verdict(st.Interval(0.7, 0.65, 0.75, 3), 0.8), st.NOT_MET)
        self.assertEqual(st.verdict(st.Interval(0.8, 0.70, 0.90, 3), 0.8), st.OPEN)
        self.assertIsNone(st.verdict(st.Interval(0.9, 0.9, 0.9, 1), 0.8))            # one round: no verdict
        self.assertIsNone(st.verdict(None, 0.8))

    def test_lower_is_better(self):
        self.assertEqual(st.verdict(st.Interval(2.0, 1.5, 2.5, 4), 3.0, higher_is_better=False), st.MET)
        self.assertEqual(st.verdict(st.Interval(4.0, 3.5, 4.5, 4), 3.0, higher_is_better=False), st.NOT_MET)
        self.assertEqual(st.verdict(st.Interval(3.0, 2.5, 3.5, 4), 3.0, higher_is_better=False), st.OPEN)


class Targets(unittest.TestCase):
    def test_parse(self):
        got = st.parse_targets(["write=0.8", "read-point@16=0.97,*@2048=1.5"])
        self.assertEqual(got, [st.Target("write", None, 0.8), st.Target("read-point", 16, 0.97),
                               st.Target("*", 2048, 1.5)])
        self.assertEqual([t.text() for t in got], ["write=0.8", "read-point@16=0.97", "*@2048=1.5"])
        self.assertEqual(st.parse_targets(None), [])

    def test_bad_values(self):
        for bad in ("write", "write=", "write=abc", "=0.8", "write@x=0.8", "write=0", "a b=1"):
            with self.subTest(bad=bad), self.assertRaises(st.TargetError):
                st.parse_targets([bad])

    def test_most_specific_wins(self):
        goals = st.parse_targets(["*=0.5,write=0.8,write@64=0.9,*@64=0.7"])
        self.assertEqual(st.target_for(goals, "write", 64).ratio, 0.9)
        self.assertEqual(st.target_for(goals, "write", 16).ratio, 0.8)
        self.assertEqual(st.target_for(goals, "read-point", 64).ratio, 0.7)
        self.assertEqual(st.target_for(goals, "read-point", 16).ratio, 0.5)
        self.assertIsNone(st.target_for(st.parse_targets(["write=0.8"]), "read-point", 16))


if __name__ == "__main__":
    unittest.main()


class AnatomyCells(unittest.TestCase):
    """strata-bench anatomy's table cells: the same mean and interval as every page."""

    def test_cells_use_the_shared_interval(self):
        from bench import commit_anatomy
        rounds = [100.0, 120.0, 110.0, None]   # a round without the counter is skipped
        iv = st.interval(rounds)
        self.assertEqual(commit_anatomy.fmt(rounds), f"110 us ± {iv.half:,.0f}")
        self.assertEqual(commit_anatomy.fmt([1500.0, 1700.0], "us"), f"1.60 ms ± {st.interval([1500, 1700]).half / 1000:,.2f}")
        self.assertEqual(commit_anatomy.fmt([2.0]), "2 us")          # one round: no interval
        self.assertEqual(commit_anatomy.fmt([None, None], "x"), "—")
