"""The runner on fake servers and a fake sysbench: order, results, failures, clean-up, signals."""
import io
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fakes  # noqa: E402
from bench import cli  # noqa: E402
from bench.plan import Plan  # noqa: E402
from bench.report import CsvLog, read_csv  # noqa: E402
from bench.runner import BenchError, Progress, Runner  # noqa: E402
from bench.scenarios import Dataset, scenario  # noqa: E402
from bench.targets import marker_matches, parse_targets  # noqa: E402

# The command line as scripts/strata-bench runs it, after its set-up step
# (scripts/tests/test_entry_points.py tests that step).
STRATA_BENCH = HERE.parents[0] / "__main__.py"


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


class RunnerTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = Path(self.tmp.name)
        fakes.FakeServer.log = []
        fakes.FakeServer.fail_start = set()
        os.environ["FAKE_SB_TICK"] = "0.002"
        os.environ.pop("FAKE_SB_MODE", None)
        os.environ["FAKE_SB_PIDS"] = str(self.work / "sysbench.pids")

    def tearDown(self):
        for key in ("FAKE_SB_TICK", "FAKE_SB_MODE", "FAKE_SB_PIDS"):
            os.environ.pop(key, None)
        self.tmp.cleanup()

    def runner(self, points=((("read-point"), 4), ("read-point", 32)), targets=("stock", "fork"), warmup=2,
               client_policy="normal"):
        plan = Plan(parse_targets(list(targets), {"stock": 0, "fork": 0}), [Dataset("fixed", 3, 100)],
                    [(scenario(n), t) for n, t in points], seconds=5, warmup=warmup, settle=0, pool_bytes=1 << 30)
        self.out = io.StringIO()
        return Runner(plan, fakes.FakeServer, self.work / "data", self.work / "out", 23306,
                      sysbench_bin=str(fakes.FAKE_SYSBENCH), progress=Progress(self.out),
                      client_policy=client_policy)

    def run_all(self, runner):
        csv = CsvLog(self.work / "points.csv")
        try:
            return runner.run(csv)
        finally:
            runner.close()
            csv.close()

    def test_full_run(self):
        r = self.runner()
        results = self.run_all(r)
        self.assertEqual([(x.target, x.threads, x.status) for x in results],
                         [("stock", 4, "ok"), ("fork", 4, "ok"), ("fork", 32, "ok"), ("stock", 32, "ok")])
        self.assertEqual(results[0].qps, 4000.0)
        self.assertEqual(results[2].tps, 3200.0)
        self.assertEqual(results[0].p99_ms, 1.96)
        self.assertEqual(len(read_csv(self.work / "points.csv")), 4)
        # one server at a time; fork serves two points in a row; a server
        # restarts once right after preparing its dataset (flushes it)
        self.assertEqual([e for e, _ in fakes.FakeServer.log],
                         ["start", "stop", "start", "stop", "start", "stop", "start", "stop", "start", "stop"])
        r2 = self.runner()
        fakes.FakeServer.log = []
        self.run_all(r2)  # prepared already: no restart
        self.assertEqual([e for e, _ in fakes.FakeServer.log], ["start", "stop", "start", "stop", "start", "stop"])
        # prepared once, marker written; raw log per point
        for t in ("stock", "fork"):
            self.assertTrue(marker_matches(self.work / "data" / t / "3x100", Dataset("fixed", 3, 100)))
        self.assertEqual(len(list((self.work / "out" / "raw").glob("*.txt"))), 4)
        self.assertFalse(any(s.running() for s in r.started.servers))

    def test_client_policy(self):
        self.run_all(self.runner(points=(("read-point", 4),), targets=("stock",), client_policy="batch"))
        lines = (self.work / "sysbench.pids").read_text().splitlines()
        self.assertTrue(lines)
        self.assertTrue(all(line.endswith(f"policy={os.SCHED_BATCH}") for line in lines), lines)
        (self.work / "sysbench.pids").unlink()
        self.run_all(self.runner(points=(("read-point", 4),), targets=("stock",)))
        lines = (self.work / "sysbench.pids").read_text().splitlines()
        self.assertTrue(all(line.endswith(f"policy={os.SCHED_OTHER}") for line in lines), lines)
        with self.assertRaises(ValueError):
            self.runner(client_policy="fifo")

    def test_waits_for_purge(self):
        fakes.FakeServer.backlog = [50_000, 20_000, 900, 0]
        slept = []
        r = self.runner(points=(("write", 4),), targets=("stock",))
        r.sleep = slept.append
        try:
            results = self.run_all(r)
        finally:
            fakes.FakeServer.backlog = [0]
        self.assertEqual(results[0].purge_backlog, 900)
        self.assertEqual(len(slept), 2)

    def test_dataset_reused(self):
        self.run_all(self.runner())
        pids = (self.work / "sysbench.pids").read_text()
        self.assertEqual(pids.count("prepare"), 2)
        self.run_all(self.runner())
        self.assertEqual((self.work / "sysbench.pids").read_text().count("prepare"), 2)

    def test_interrupted_prepare_is_redone(self):
        home = self.work / "data" / "stock" / "3x100"
        (home / "data").mkdir(parents=True)
        (home / "data" / "half-prepared").write_text("x")
        self.run_all(self.runner(targets=("stock",)))
        self.assertFalse((home / "data" / "half-prepared").exists())

    def test_failed_point_is_recorded_and_run_goes_on(self):
        os.environ["FAKE_SB_MODE"] = "fatal"
        r = self.runner(points=(("read-point", 4),), targets=("stock",), warmup=0)
        # prepare must succeed: the fake only fails 'run'
        results = self.run_all(r)
        self.assertEqual(results[0].status, "failed")
        self.assertIn("1461", results[0].error)
        self.assertIn("FAILED", self.out.getvalue())

    def test_start_failure_is_one_line(self):
        fakes.FakeServer.fail_start = {"fork"}
        r = self.runner()
        with self.assertRaises(BenchError) as e:
            self.run_all(r)
        self.assertEqual(str(e.exception), "target fork did not start: fork: mysqld exited with status 1 while starting; "
                                           f"last lines of {self.work}/data/fork/3x100/mysqld.err:")
        # stock's point was measured and kept; nothing left running
        self.assertEqual(len(read_csv(self.work / "points.csv")), 1)
        self.assertFalse(any(s.running() for s in r.started.servers))

    def test_port_in_use(self):
        r = self.runner()
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", 23307))
            s.listen()
            with self.assertRaises(BenchError) as e:
                cli.check_ports(r)
        self.assertIn("port 23307 (target fork) is in use", str(e.exception))

    def test_leftover_server_is_stopped(self):
        r = self.runner(targets=("stock",))
        srv = r.server(r.plan.targets[0], r.plan.datasets[0])
        srv.start()
        pid = srv._pid()
        self.assertTrue(alive(pid))
        r2 = self.runner(targets=("stock",))
        r2.stop_leftovers()
        time.sleep(0.1)
        srv._proc.poll()
        self.assertFalse(alive(pid))


class InterruptTest(unittest.TestCase):
    def test_sigint_stops_everything(self):
        with tempfile.TemporaryDirectory() as d:
            work = Path(d)
            proc = subprocess.Popen([sys.executable, str(HERE / "interrupt_helper.py"), str(work)],
                                    stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            pids_file = work / "sysbench.pids"
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                if pids_file.exists() and " run" in pids_file.read_text():
                    break
                time.sleep(0.05)
            else:
                proc.kill()
                self.fail("the fake run never started: " + proc.communicate()[0])
            time.sleep(0.3)
            sb_pid = int(pids_file.read_text().splitlines()[-1].split()[0])
            server_pid = int((work / "data" / "stock" / "2x100" / "fake.pid").read_text())
            self.assertTrue(alive(sb_pid) and alive(server_pid))
            proc.send_signal(signal.SIGINT)
            out, _ = proc.communicate(timeout=30)
            self.assertEqual(proc.returncode, 130, out)
            self.assertIn("interrupted", out)
            time.sleep(0.2)
            self.assertFalse(alive(sb_pid), "sysbench survived the interrupt")
            self.assertFalse(alive(server_pid), "the server survived the interrupt")


class CommandLine(unittest.TestCase):
    def run_cli(self, *args):
        return subprocess.run([sys.executable, str(STRATA_BENCH), *args], capture_output=True, text=True, timeout=60)

    def test_bad_input_is_one_line(self):
        for args, words in [(("run", "--scenario", "nope"), "unknown scenario"),
                            (("run", "--target", "mariadb"), "unknown target"),
                            (("run", "--dataset", "huge"), "unknown dataset"),
                            (("run", "--preset", "nightly"), "unknown preset"),
                            (("run", "--pool", "99%"), "pool share"),
                            (("report", "/nonexistent"), "points.csv")]:
            out = self.run_cli(*args)
            self.assertEqual(out.returncode, 1, args)
            self.assertEqual(out.stdout, "", args)
            self.assertEqual(len(out.stderr.strip().splitlines()), 1, out.stderr)
            self.assertTrue(out.stderr.startswith("error: "), out.stderr)
            self.assertIn(words, out.stderr)

    def test_list_and_plan(self):
        self.assertIn("mix-4to1", self.run_cli("list").stdout)
        out = self.run_cli("plan", "--preset", "whitepaper")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("20 measured points", out.stdout)


if __name__ == "__main__":
    unittest.main()
