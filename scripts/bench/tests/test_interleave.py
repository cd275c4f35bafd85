"""interleave.py: which report seconds make a window, and the ratio summary."""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import interleave as il  # noqa: E402


def report(qps_per_second: list[float]) -> str:
    lines = ["Threads started!", ""]
    for i, qps in enumerate(qps_per_second, 1):
        lines.append(f"[ {i}s ] thds: 16 tps: {qps:.2f} qps: {qps:.2f} (r/w/o: {qps:.2f}/0.00/0.00) "
                     "lat (ms,95%): 1.55 err/s: 0.00 reconn/s: 0.00")
    return "\n".join(lines) + "\n"


class WindowTest(unittest.TestCase):
    def test_skips_the_warm_seconds_and_averages_the_window(self):
        out = report([1.0, 2.0, 10.0, 20.0, 30.0, 99.0])
        self.assertEqual(il.window_qps(out, warm=2, secs=3), 20.0)

    def test_too_few_report_lines_is_an_error(self):
        with self.assertRaises(RuntimeError):
            il.window_qps(report([5.0, 5.0, 5.0]), warm=2, secs=3)


class SummaryTest(unittest.TestCase):
    def test_ratios_are_per_cycle_against_the_first_server(self):
        cycles = [{"a": 100.0, "b": 110.0}, {"a": 50.0, "b": 55.0}, {"a": 80.0, "b": 88.0}]
        text = il.summary(["a", "b"], cycles)
        row_b = next(line for line in text.splitlines() if line.startswith("b "))
        # QPS drifts between cycles, the ratio does not: 1.100, no spread.
        self.assertEqual(row_b.split(), ["b", "88", "1.100", "1.100", "0.000"])


class PortTest(unittest.TestCase):
    def test_reads_the_mysqld_port(self):
        with tempfile.TemporaryDirectory() as tmp:
            cnf = Path(tmp) / "my.cnf"
            cnf.write_text("[mysqld]\nbasedir = /x\nport = 13307\n[client]\nport = 13307\n")
            self.assertEqual(il.port_of(cnf), 13307)


if __name__ == "__main__":
    unittest.main()
