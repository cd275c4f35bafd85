"""sysbench on a client machine: the probe, the remote command, its clean-up, the runner's use of it.

ssh is tests/fake_ssh.py (runs the command with sh here, $SSH_CONNECTION set);
sysbench is tests/fake_sysbench.py, on PATH as `sysbench` for the probe.
"""
import dataclasses
import io
import json
import os
import resource
import shlex
import subprocess
import sys
import tempfile
import time
import unittest
from unittest import mock
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import fakes  # noqa: E402
from bench import client_machine as cm  # noqa: E402
from bench.plan import Plan  # noqa: E402
from bench.report import CsvLog  # noqa: E402
from bench.runner import Progress, Runner  # noqa: E402
from bench.scenarios import LUA_DIR, Dataset, scenario  # noqa: E402
from bench.targets import parse_targets  # noqa: E402

FAKE_SSH = (str(HERE / "fake_ssh.py"), "-o", "BatchMode=yes")


class WithFakes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.work = Path(self.tmp.name)
        bin_dir = self.work / "bin"
        bin_dir.mkdir()
        (bin_dir / "sysbench").symlink_to(fakes.FAKE_SYSBENCH)
        self.saved_env = dict(os.environ)
        os.environ["PATH"] = f"{bin_dir}:{os.environ['PATH']}"
        os.environ["FAKE_SB_TICK"] = "0.002"
        os.environ["FAKE_SB_ARGS"] = str(self.work / "sysbench.args")
        os.environ.pop("FAKE_SB_MODE", None)
        os.environ.pop("FAKE_SB_PIDS", None)

    def tearDown(self):
        os.environ.clear()
        os.environ.update(self.saved_env)
        self.tmp.cleanup()

    def machine(self) -> cm.ClientMachine:
        m = cm.probe("client.example", ssh=FAKE_SSH)
        return dataclasses.replace(m, lua_dir=str(self.work / "remote-lua"))

    def sysbench_calls(self) -> list[list[str]]:
        path = self.work / "sysbench.args"
        return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class ProbeTest(WithFakes):
    def test_addresses_and_version(self):
        m = cm.probe("client.example", ssh=FAKE_SSH)
        self.assertEqual((m.server_address, m.client_address, m.sysbench_version), ("10.1.2.3", "10.1.2.4", "1.0.20"))
        self.assertEqual(m.bind_address(), "127.0.0.1,10.1.2.3")
        self.assertEqual(m.connection(14000).host, "10.1.2.3")
        self.assertEqual(m.connection(14000).user, cm.BENCH_USER)
        self.assertEqual(m.account_sql(), ["CREATE USER IF NOT EXISTS 'strata_bench'@'10.1.2.4'",
                                           "GRANT ALL ON *.* TO 'strata_bench'@'10.1.2.4'"])

    def test_unreachable(self):
        with self.assertRaisesRegex(cm.ClientMachineError, "unreachable: ssh failed: .*No route to host"):
            cm.probe("unreachable", ssh=FAKE_SSH)

    def test_missing_ssh_names_the_set_up_that_installs_it(self):
        with self.assertRaisesRegex(cm.ClientMachineError, r"no-such-ssh is not installed here; scripts/setup --bench"):
            cm.probe("client.example", ssh=("no-such-ssh", "-o", "BatchMode=yes"))

    def test_parse_errors_say_what_is_wrong(self):
        with self.assertRaisesRegex(cm.ClientMachineError, "sysbench is not installed there"):
            cm.parse_probe("c", "10.1.2.3 1 10.1.2.4 22\nsh: 1: sysbench: not found\n")
        with self.assertRaisesRegex(cm.ClientMachineError, "sysbench 1.0.17 there, 1.0.20 expected"):
            cm.parse_probe("c", "10.1.2.3 1 10.1.2.4 22\nsysbench 1.0.17\n")
        with self.assertRaisesRegex(cm.ClientMachineError, "SSH_CONNECTION"):
            cm.parse_probe("c", "\nsysbench 1.0.20\n")
        m = cm.parse_probe("c", "fe80::1%eth0 1 fe80::2%eth0 22\nsysbench 1.0.20\n")
        self.assertEqual((m.server_address, m.client_address), ("fe80::1", "fe80::2"))


class RemoteCommandTest(WithFakes):
    def test_arguments_arrive_unchanged_and_lua_paths_move(self):
        m = self.machine()
        odd = ["--mysql-db=sb test", "--x='quoted'", "--y=$HOME;rm -rf /", f"{LUA_DIR}/strata_mix.lua"]
        run = m.run(["sysbench", *odd, "--version-less"], LUA_DIR)
        self.assertEqual(run.returncode, 0, run.stdout)
        self.assertEqual(self.sysbench_calls(),
                         [odd[:3] + [f"{m.lua_dir}/strata_mix.lua", "--version-less"]])

    def test_exit_status_passes_through(self):
        script = cm.remote_script(["sh", "-c", "echo out; exit 3"])
        proc = subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            status = proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.stdin.close()  # ends the watcher, which holds stdout
            proc.wait()
            status = "still running after 10 s"
        self.assertEqual(status, 3)
        self.assertEqual(proc.stdout.read(), "out\n")
        # Ended by itself: nothing over there still reads the channel (the watcher's cat is gone),
        # so a write into it finds no reader.
        time.sleep(0.2)
        with self.assertRaises(BrokenPipeError):
            proc.stdin.write("x" * 65536)
            proc.stdin.flush()
        proc.stdout.close()
        try:
            proc.stdin.close()
        except BrokenPipeError:
            pass

    def test_open_files_limit_is_raised(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if hard == resource.RLIM_INFINITY or hard <= 256:
            self.skipTest(f"hard open files limit {hard}")
        script = cm.remote_script(["sh", "-c", "ulimit -n"])
        with subprocess.Popen(["sh", "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                              preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))) as proc:
            self.assertEqual(proc.stdout.read().strip(), str(hard))
            proc.stdin.close()

    def test_remote_run_ends_when_ssh_goes(self):
        marker = self.work / "remote.pid"
        script = cm.remote_script(["sh", "-c", f"echo $$ > {shlex.quote(str(marker))}; exec sleep 60"])
        for shell in ("sh", "bash"):
            marker.unlink(missing_ok=True)
            proc = subprocess.Popen([shell, "-c", script], stdin=subprocess.PIPE, stderr=subprocess.DEVNULL)
            for _ in range(100):
                if marker.exists() and marker.read_text().strip():
                    break
                time.sleep(0.05)
            pid = int(marker.read_text())
            proc.stdin.close()  # what the remote side sees when the local ssh is killed
            proc.wait(timeout=10)
            for _ in range(100):
                if not Path(f"/proc/{pid}").exists():
                    break
                time.sleep(0.05)
            self.assertFalse(Path(f"/proc/{pid}").exists(), f"{shell}: the remote sleep {pid} outlived ssh")

    def test_open_machine_with_another_listen_address(self):
        probed = self.machine()
        copied = []
        with mock.patch.object(cm, "probe", return_value=probed), \
                mock.patch.object(cm, "install_scripts", side_effect=lambda m, d: copied.append(m)):
            opened = cm.open_machine("client.example", "192.168.7.1", LUA_DIR)
        self.assertEqual((opened.server_address, opened.client_address), ("192.168.7.1", "10.1.2.4"))
        self.assertEqual(opened.bind_address(), "127.0.0.1,192.168.7.1")
        self.assertEqual(copied, [opened])

    def test_install_scripts(self):
        m = self.machine()
        (self.work / "remote-lua").mkdir()
        (self.work / "remote-lua" / "stale.lua").write_text("old")
        cm.install_scripts(m, LUA_DIR)
        copied = sorted(p.name for p in (self.work / "remote-lua").iterdir())
        self.assertEqual(copied, sorted(p.name for p in LUA_DIR.iterdir()))


class RunnerOnClientMachineTest(WithFakes):
    def test_points_run_over_there_against_the_account(self):
        statements = []

        class Server(fakes.FakeServer):
            def sql(self, statement):
                statements.append(statement)
                return ""

        fakes.FakeServer.log = []
        m = self.machine()
        plan = Plan(parse_targets(["stock"], {"stock": 0}), [Dataset("fixed", 3, 100)],
                    [(scenario("read-point"), 4)], seconds=3, warmup=1, settle=0, pool_bytes=1 << 30)
        runner = Runner(plan, Server, self.work / "data", self.work / "out", 23306,
                        sysbench_bin="sysbench", progress=Progress(io.StringIO()), client=m)
        csv = CsvLog(self.work / "points.csv")
        try:
            results = runner.run(csv)
        finally:
            runner.close()
            csv.close()
        self.assertEqual([r.status for r in results], ["ok"])
        calls = self.sysbench_calls()
        self.assertEqual([c[-1] for c in calls], ["prepare", "prewarm", "run"])
        for c in calls:
            self.assertIn("--mysql-host=10.1.2.3", c)
            self.assertIn(f"--mysql-user={cm.BENCH_USER}", c)
        # the account exists before the first sysbench (prepare) and again after every start
        self.assertEqual(statements.count(m.account_sql()[0]), 2)
        self.assertLess(statements.index(m.account_sql()[1]), statements.index("CREATE DATABASE IF NOT EXISTS sbtest"))
        log = Path(results[0].log).read_text().splitlines()[0]
        self.assertIn("fake_ssh.py", log)


if __name__ == "__main__":
    unittest.main()
