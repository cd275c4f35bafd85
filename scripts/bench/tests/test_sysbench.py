"""The sysbench side: command lines, the report parser, percentiles from the histogram."""
import re
import subprocess
import sys
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))
from bench import sysbench as sb  # noqa: E402

FIXTURES = HERE / "fixtures"


def fake_output(*args, env=None) -> str:
    return subprocess.run([sys.executable, str(HERE / "fake_sysbench.py"), *args], capture_output=True,
                          text=True, env=env).stdout


class Percentiles(unittest.TestCase):
    def test_bucket_round_trip(self):
        # Above ~0.06 ms every bucket prints (3 decimals) as a distinct value.
        for i in (250, 346, 500, 800, 1023):
            self.assertEqual(sb.bucket_index(round(sb.bucket_value(i), 3)), i)

    def test_same_as_sysbench_printed(self):
        # Real sysbench 1.0.20 runs: our percentile over the printed buckets must equal the
        # percentile sysbench printed. The cpu runs hold many buckets that print alike
        # below 0.06 ms; the OLTP runs (against the fork, 32 threads) hundreds of buckets each.
        for name in ("cpu_p95.txt", "cpu_p99.txt", "oltp_point_select_run.txt", "oltp_point_select_run2.txt",
                     "oltp_write_only_run.txt"):
            text = (FIXTURES / name).read_text()
            printed = re.findall(r"(\d+)th percentile:\s+([0-9.]+)", text)[-1]
            pct, value = int(printed[0]), float(printed[1])
            hist = sb.histogram_of(text)
            self.assertGreater(len(hist), 10, name)
            self.assertEqual(float(f"{sb.percentile(hist, pct):.2f}"), value, name)

    def test_edges(self):
        self.assertIsNone(sb.percentile([], 95))
        self.assertAlmostEqual(sb.percentile([(1.007, 1)], 99), sb.bucket_value(384))
        # Two buckets printed with the same 3-decimal value are two consecutive buckets,
        # and a later, unambiguous row lands on its own bucket again (no drift).
        first = sb.bucket_index(0.022)
        self.assertEqual(sb.bucket_index(0.022, first), first + 1)
        hist = [(0.022, 50), (0.022, 50), (1.551, 1)]
        self.assertGreater(sb.percentile(hist, 60), sb.percentile(hist, 40))
        self.assertEqual(f"{sb.percentile(hist, 100):.3f}", "1.551")


class ReportParser(unittest.TestCase):
    def test_final_report_after_checkpoint(self):
        text = fake_output("oltp_point_select", "--threads=4", "--time=6", "--report-checkpoints=2", "run",
                           env={"FAKE_SB_TICK": "0"})
        rep = sb.parse_report(text)
        self.assertEqual(rep.checkpoints, 1)
        self.assertEqual(rep.transactions, 100 * 4 * 4)        # the measured part only
        self.assertEqual(rep.tps, 400.0)
        self.assertEqual(rep.qps, 4000.0)
        self.assertEqual(rep.reads, 16000)
        self.assertEqual((rep.ignored_errors, rep.reconnects), (0, 0))
        self.assertEqual(rep.p99_ms, 1.96)
        self.assertEqual(rep.p95_ms, round(sb.bucket_value(384), 2))
        self.assertEqual(rep.warnings, [])

    def test_real_point_select_report(self):
        path = FIXTURES / "oltp_point_select_run.txt"
        if not path.exists():
            self.skipTest("no captured real run")
        rep = sb.parse_report(path.read_text())
        # Debian's sysbench 1.0.20 against the fork (9.7.2-strata), 32 threads, 5 s warm-up
        # checkpoint + 10 s: the checkpoint's figures (111118 transactions) must not leak in.
        self.assertEqual((rep.transactions, rep.tps), (224142, 22361.33))
        self.assertEqual((rep.queries, rep.qps), (224142, 22361.33))
        self.assertEqual(rep.checkpoints, 1)
        self.assertEqual(rep.p99_ms, 11.04)
        self.assertLess(rep.p95_ms, rep.p99_ms)
        self.assertEqual(rep.warnings, [])
        rep = sb.parse_report((FIXTURES / "oltp_write_only_run.txt").read_text())
        self.assertEqual(rep.writes + rep.other + rep.reads, rep.queries)
        self.assertEqual((rep.transactions, rep.ignored_errors, rep.p99_ms), (18351, 2, 58.92))  # 2 deadlocks

    def test_no_report_is_an_error(self):
        text = fake_output("oltp_point_select", "--threads=2000", "run", env={"FAKE_SB_MODE": "fatal"})
        with self.assertRaises(sb.ParseError) as e:
            sb.parse_report(text)
        self.assertIn("FATAL", str(e.exception))
        self.assertIn("1461", sb.fatal_summary(text))

    def test_errors_counted(self):
        text = fake_output("x", "--time=2", "run", env={"FAKE_SB_TICK": "0"})
        text = text.replace("ignored errors:                      0      (0.00 per sec.)",
                            "ignored errors:                      17     (8.50 per sec.)")
        text = text.replace("reconnects:                          0      (0.00 per sec.)",
                            "reconnects:                          3      (1.50 per sec.)")
        rep = sb.parse_report(text)
        self.assertEqual((rep.ignored_errors, rep.reconnects), (17, 3))

    def test_histogram_mismatch_is_reported(self):
        text = fake_output("x", "--time=2", "run", env={"FAKE_SB_TICK": "0"})
        text = text.replace("99th percentile:                        1.96", "99th percentile:                        7.00")
        rep = sb.parse_report(text)
        self.assertTrue(any("p99 from the histogram" in w for w in rep.warnings))

    def test_interval_line(self):
        iv = sb.parse_interval("[ 12s ] thds: 64 tps: 1219.87 qps: 24412.43 (r/w/o: 17089.50/4883.26/2439.67) "
                               "lat (ms,99%): 78.60 err/s: 0.50 reconn/s: 0.00")
        self.assertEqual((iv.second, iv.threads, iv.qps, iv.lat_ms, iv.err_per_s), (12, 64, 24412.43, 78.6, 0.5))
        self.assertIsNone(sb.parse_interval("Threads started!"))


class CommandLines(unittest.TestCase):
    def test_run_args(self):
        conn = sb.Connection("127.0.0.1", 13306)
        args = sb.run_args("oltp_read_only", {"skip_trx": "on"}, conn, 10, 25000, 64, 30, 120, ["--rand-type=uniform"])
        self.assertEqual(args[0], "oltp_read_only")
        self.assertEqual(args[-1], "run")
        for a in ("--mysql-port=13306", "--tables=10", "--table_size=25000", "--threads=64", "--time=150",
                  "--report-checkpoints=30", "--percentile=99", "--histogram=on", "--skip_trx=on",
                  "--rand-type=uniform"):
            self.assertIn(a, args)

    def test_no_checkpoint_without_warmup(self):
        args = sb.run_args("x", {}, sb.Connection("h", 1), 1, 1, 1, 0, 10)
        self.assertFalse(any(a.startswith("--report-checkpoints") for a in args))

    def test_our_lua_loads_in_real_sysbench(self):
        from bench.scenarios import SCENARIOS
        try:
            out = subprocess.run(["sysbench", SCENARIOS["mix-4to1"].script, "help"], capture_output=True,
                                 text=True, timeout=30)
        except FileNotFoundError:
            self.skipTest("sysbench is not installed")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("--mix_same_row", out.stdout)
        self.assertRegex(out.stdout, r"--point_selects=N\s+.*\[4\]")


if __name__ == "__main__":
    unittest.main()
