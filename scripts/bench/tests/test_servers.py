"""The real-server glue, without a server: error lines, open-files limit, build checks."""
import resource
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import cli  # noqa: E402
from bench.runner import BenchError  # noqa: E402
from bench.scenarios import Dataset  # noqa: E402
from bench.servers import MissingServer, MysqldServer, check_build  # noqa: E402
from bench.targets import parse_target  # noqa: E402


class StartFailure(unittest.TestCase):
    def test_one_line_with_the_servers_reason(self):
        with tempfile.TemporaryDirectory() as d:
            home = Path(d)
            target = parse_target("fork:foo=1", {"fork": 0})
            srv = MysqldServer(target, Dataset("fixed", 1, 10), home, 13399, {"skip-log-bin": None})
            (home / "mysqld.err").write_text(
                "2026-11-22T05:00:00.000000Z 0 [System] [MY-010116] [Server] starting as process 1\n"
                "2026-11-22T05:00:00.000001Z 0 [ERROR] [MY-000067] [Server] unknown variable 'foo=1'.\n"
                "2026-11-22T05:00:00.000002Z 0 [ERROR] [MY-010119] [Server] Aborting\n")
            err = RuntimeError(f"fork:foo=1: mysqld exited with status 1 while starting; last lines of "
                               f"{home}/mysqld.err:\n...\n...")
            line = srv.describe_failure(err)
            self.assertNotIn("\n", line)
            self.assertEqual(line, "target fork:foo=1 did not start: fork:foo=1: mysqld exited with status 1 "
                                   f"while starting. unknown variable 'foo=1'. (log: {home}/mysqld.err)")
            # the target's overrides go into its my.cnf after the common settings
            self.assertEqual(srv.instance.options["foo"], "1")
            self.assertIn("skip-log-bin", srv.instance.options)


class SocketPath(unittest.TestCase):
    def test_a_deep_home_gets_a_short_socket(self):
        target = parse_target("fork:foo=1", {"fork": 0})
        short = MysqldServer(target, Dataset("fixed", 1, 10), Path("/work/x"), 13399, {})
        self.assertEqual(short.instance.socket, Path("/work/x/mysqld.sock"))
        deep_home = Path("/work/checkout/.build/bench/data/" + "fork-plugin-load-add-x" * 4 + "/10x25000")
        deep = MysqldServer(target, Dataset("fixed", 1, 10), deep_home, 13399, {})
        self.assertLessEqual(len(str(deep.instance.socket)), 107)
        self.assertEqual(deep.instance.socket,
                         MysqldServer(target, Dataset("fixed", 1, 10), deep_home, 13399, {}).instance.socket)


class OpenFiles(unittest.TestCase):
    def test_enough_already(self):
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        self.assertIsNone(cli.raise_open_files(min(soft, 64)))

    def test_cannot_raise_is_one_line(self):
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        with mock.patch.object(resource, "setrlimit", side_effect=ValueError("not allowed")):
            with self.assertRaises(BenchError) as e:
                cli.raise_open_files(soft + 1)
        self.assertIn(f"ulimit -n {soft + 1}", str(e.exception))
        self.assertNotIn("\n", str(e.exception))


class Builds(unittest.TestCase):
    def test_missing_build_names_the_command(self):
        with tempfile.TemporaryDirectory() as d:
            with mock.patch.dict("strata_tools.paths.SERVER_BUILDS", {"stock": Path(d)}):
                with self.assertRaises(MissingServer) as e:
                    check_build("stock")
        self.assertIn("scripts/build-server stock", str(e.exception))
        self.assertIn("--build", str(e.exception))


if __name__ == "__main__":
    unittest.main()
