"""Results: CSV round trip, the markdown table with ratios and failures, plots, machine facts."""
import csv
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import report as rp  # noqa: E402


def point(seq, target, scenario="read-point", threads=4, qps=1000.0, status="ok", **kw):
    return rp.PointResult(seq=seq, dataset="8x10000", tables=8, rows=10000, scenario=scenario, threads=threads,
                          target=target, status=status, qps=qps if status == "ok" else None,
                          tps=qps / 10 if status == "ok" else None, p95_ms=kw.get("p95", 1.5),
                          p99_ms=kw.get("p99", 2.5), ignored_errors=kw.get("ign", 0), reconnects=0,
                          error=kw.get("error", ""))


class Csv(unittest.TestCase):
    def test_round_trip_and_append(self):
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "points.csv"
            log = rp.CsvLog(path)
            log.add(point(1, "stock"))
            log.close()
            log = rp.CsvLog(path)          # a second writer appends, no second header
            log.add(point(2, "fork", qps=1500.0, status="failed", error="boom"))
            log.close()
            rows = rp.read_csv(path)
            self.assertEqual([r.target for r in rows], ["stock", "fork"])
            self.assertEqual(rows[0].qps, 1000.0)
            self.assertIsNone(rows[1].qps)
            self.assertEqual(rows[1].error, "boom")
            with open(path) as f:
                self.assertEqual(sum(1 for r in csv.reader(f) if r[0] == "seq"), 1)


class Table(unittest.TestCase):
    def test_ratio_and_columns(self):
        rows = [point(1, "stock", qps=1000.0), point(2, "fork", qps=1500.0, ign=3),
                point(3, "fork", threads=32, qps=3000.0), point(4, "stock", threads=32, qps=2000.0)]
        md = rp.markdown_table(rows)
        lines = md.strip().splitlines()
        self.assertIn("| rounds | stock QPS | fork QPS | fork / stock |", lines[0])
        self.assertIn("| 1 | 1,000 | 1,500 | 1.500x |", lines[2])   # one round: no interval
        self.assertIn("fork: 3 ignored, 0 reconnects", lines[2])
        self.assertIn("| 2,000 | 3,000 | 1.500x |", lines[3])
        self.assertEqual(len(lines), 4)
        text = rp.text_table(rows)
        self.assertIn("1.50x", text)

    def test_failed_point(self):
        rows = [point(1, "stock"), point(2, "fork", status="failed", error="FATAL: MySQL error: 1461")]
        md = rp.markdown_table(rows)
        self.assertIn("failed", md)
        self.assertIn("1461", md)
        self.assertIn("| - |", md)  # no ratio without both figures

    def test_rounds(self):
        rows = [point(1, "stock", qps=1000.0), point(2, "fork", qps=990.0),
                point(3, "fork", qps=900.0), point(4, "stock", qps=1000.0),
                point(5, "stock", qps=800.0), point(6, "fork", qps=800.0)]
        md = rp.markdown_table(rows)
        # Means over the three rounds with their 95% half-intervals (t = 4.303 at 2 degrees of
        # freedom); the ratio is the mean of the per-round ratios 0.99, 0.90, 1.00.
        self.assertIn("| 3 | 933 ± 287 | 897 ± 236 | 0.963x ± 0.137 |", md)
        per_round = rp.rounds_table(rows)
        self.assertIn("| read-point | 8x10000 | 4 | 2 | 1,000 | 900 | 0.900x |", per_round)
        self.assertEqual(rp.rounds_table(rows[:2]), "")

    def test_rounds_pair_within_a_round_and_skip_a_failed_one(self):
        rows = [point(1, "stock", qps=1000.0), point(2, "fork", qps=800.0),
                point(3, "fork", status="failed", error="FATAL: boom"), point(4, "stock", qps=2000.0),
                point(5, "stock", qps=1000.0), point(6, "fork", qps=1000.0)]
        targets, groups = rp.grouped(rows)
        ps = rp.point_stats(next(iter(groups.values())), targets)
        self.assertEqual(rp.round_pairs(next(iter(groups.values())), "stock", "fork"), [0.8, 1.0])
        self.assertAlmostEqual(ps.ratio["fork"].mean, 0.9)
        self.assertEqual(ps.qps["fork"].n, 2)
        md = rp.markdown_table(rows)
        self.assertIn("fork: 1 of 3 rounds failed", md)
        self.assertIn("FATAL: boom", md)

    def test_verdict_only_when_the_interval_clears_the_target(self):
        def run(ratios):
            rows = []
            for i, q in enumerate(ratios):
                rows += [point(2 * i + 1, "stock", scenario="write", qps=1000.0),
                         point(2 * i + 2, "fork", scenario="write", qps=1000.0 * q)]
            return rows
        goals = rp.st.parse_targets(["write=0.8"])
        self.assertIn("| met (≥ 0.8) |", rp.markdown_table(run([0.90, 0.92, 0.91]), goals))
        self.assertIn("| not met (≥ 0.8) |", rp.markdown_table(run([0.60, 0.62, 0.61]), goals))
        self.assertIn("| open (interval holds 0.8) |", rp.markdown_table(run([0.70, 0.90, 0.80]), goals))
        self.assertIn("no interval", rp.markdown_table(run([0.90]), goals))
        self.assertNotIn("verdict", rp.markdown_table(run([0.90, 0.92])))   # no target, no verdict column
        page = rp.results_markdown(run([0.90, 0.92, 0.91]), {"target_ratios": ["write=0.8"]}, [], Path("."))
        self.assertIn("### Targets", page)
        self.assertIn("write at 4 threads (8x10000), fork: 0.910x ± 0.025 — met (≥ 0.8)", page)

    def test_empty(self):
        self.assertIn("no points", rp.markdown_table([]))


class Plots(unittest.TestCase):
    def setUp(self):
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            self.skipTest("matplotlib is not installed for this python")

    def test_lines_and_bars(self):
        rows = [point(i * 2 + 1, "stock", threads=t, qps=1000.0 * t) for i, t in enumerate((4, 32, 256))]
        rows += [point(i * 2 + 2, "fork", threads=t, qps=1100.0 * t) for i, t in enumerate((4, 32, 256))]
        bars = [point(20, "stock", scenario="write", threads=96), point(21, "fork", scenario="write", threads=96)]
        with tempfile.TemporaryDirectory() as d:
            written = rp.plot(rows, Path(d))
            self.assertEqual(len(written), 1)
            self.assertGreater(written[0].stat().st_size, 10_000)
            written = rp.plot(bars, Path(d), prefix="b-")
            self.assertTrue(written[0].name.startswith("b-plot-"))

    def test_page_with_copy(self):
        rows = [point(1, "stock"), point(2, "fork", qps=1200.0), point(3, "fork", threads=32), point(4, "stock", threads=32)]
        meta = {"title": "t", "command": "scripts/strata-bench quick", "machine": {"cpu": "2 x test"},
                "baseline": "stock", "setup": ["x"], "server_options": {"skip-log-bin": None, "a": "1"}}
        with tempfile.TemporaryDirectory() as d:
            out = Path(d) / "run"
            out.mkdir()
            page = Path(d) / "docs" / "whitepaper-test.md"
            md, plots, warning = rp.write_page(rows, meta, out, page)
            self.assertIsNone(warning)
            text = page.read_text()
            self.assertIn("scripts/strata-bench quick", text)
            self.assertIn("2 x test", text)
            self.assertIn("skip-log-bin\n", text)
            self.assertIn("(whitepaper-test-plot-8x10000.png)", text)
            self.assertTrue((page.parent / "whitepaper-test-plot-8x10000.png").exists())


class Machine(unittest.TestCase):
    def test_facts_from_fakes(self):
        files = {"/proc/cpuinfo": "model name\t: Fake CPU @ 2GHz\nmodel name\t: Fake CPU @ 2GHz\n",
                 "/etc/os-release": 'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\n'}
        outputs = {"free": "              total\nMem:    25769803776  1  2\n", "uname": "Linux 6.1.0 #1 x86_64\n",
                   "sysbench": "sysbench 1.0.20\n"}
        facts = rp.machine_facts(read=lambda p: files[p], run=lambda argv: outputs[argv[0]])
        self.assertEqual(facts["cpu"], "2 x Fake CPU @ 2GHz")
        self.assertEqual(facts["memory"], "24.0 GiB")
        self.assertEqual(facts["os"], "Debian GNU/Linux 12 (bookworm)")
        self.assertEqual(facts["sysbench"], "sysbench 1.0.20")


if __name__ == "__main__":
    unittest.main()
