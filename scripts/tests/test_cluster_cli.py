#!/usr/bin/env python3
"""End-to-end tests of scripts/strata-cluster against the built fork server.

Tier 2 (needs .build/fork/build): up on a scratch cluster directory, the
printed mysql command reaches the server, its redo lives in three log-service
nodes, status reports them all, a second up is a no-op, bad input is a
one-line error, stop stops them, a restart finds the committed data, and an
up whose primary must be initialised again empties nodes that still hold the
redo of its lost data directory.
"""
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from strata_tools import paths, ports  # noqa: E402

CLI = paths.SCRIPTS / "strata-cluster"


def cli(cluster_dir: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), "--dir", str(cluster_dir), *args],
                          capture_output=True, text=True, timeout=timeout)


class ClusterCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        try:
            paths.binary(paths.server_build("fork"), "mysqld")
        except paths.MissingBinary as e:
            raise unittest.SkipTest(f"tier 2 only: {e}")
        cls.tmp = tempfile.TemporaryDirectory(prefix="strata-cluster-test-")
        cls.dir = Path(cls.tmp.name)
        cls.port = ports.free_port(23306)

    @classmethod
    def tearDownClass(cls):
        cli(cls.dir, "stop")
        cls.tmp.cleanup()

    def test_lifecycle(self):
        up = cli(self.dir, "up", "--no-setup", "--no-build", "--port", str(self.port))
        self.assertEqual(up.returncode, 0, up.stderr)
        self.assertIn(f"127.0.0.1:{self.port}", up.stdout)

        # The printed connect command works as printed.
        connect = re.search(r"connect:\s+(.*)", up.stdout).group(1)
        query = subprocess.run(shlex.split(connect) + ["-N", "-B", "-e", "SELECT VERSION()"],
                               capture_output=True, text=True, timeout=60)
        self.assertEqual(query.returncode, 0, query.stderr)
        self.assertRegex(query.stdout.strip(), r"^9\.7\.2-strata")

        # The fork's default configuration schedules connections with our pool.
        pool_sql = ("SELECT @@global.thread_handling, PLUGIN_LIBRARY FROM information_schema.PLUGINS "
                    "WHERE PLUGIN_NAME = 'thread_pool' AND PLUGIN_STATUS = 'ACTIVE'")
        pool = subprocess.run(shlex.split(connect) + ["-N", "-B", "-e", pool_sql],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(pool.returncode, 0, pool.stderr)
        self.assertEqual(pool.stdout.split(), ["pool-of-threads", "strata_pool.so"])

        # The fork's InnoDB redo lives in the three log-service nodes, all up.
        redo_sql = ("SELECT variable_value FROM performance_schema.global_status WHERE variable_name "
                    "IN ('Innodb_log_service_nodes_up', 'Innodb_log_service_status') ORDER BY variable_name; "
                    "SELECT COUNT(*) FROM performance_schema.innodb_log_service_nodes WHERE state = 'UP'; "
                    "CREATE DATABASE cli_test; CREATE TABLE cli_test.t (id INT PRIMARY KEY); "
                    "INSERT INTO cli_test.t VALUES (42)")
        redo = subprocess.run(shlex.split(connect) + ["-N", "-B", "-e", redo_sql],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(redo.returncode, 0, redo.stderr)
        self.assertEqual(redo.stdout.split(), ["3", "OK", "3"])

        status = cli(self.dir, "status")
        self.assertEqual(status.returncode, 0, status.stdout + status.stderr)
        self.assertRegex(status.stdout, r"mysqld\s+up")
        self.assertEqual(len(re.findall(r"^lognode[123]\s+up", status.stdout, re.M)), 3, status.stdout)

        again = cli(self.dir, "up", "--no-setup", "--no-build")
        self.assertEqual(again.returncode, 0, again.stderr)
        self.assertIn("runs already", again.stderr)

        stop = cli(self.dir, "stop")
        self.assertEqual(stop.returncode, 0, stop.stderr)
        self.assertIn("mysqld: stopped", stop.stdout)
        for node in (1, 2, 3):
            self.assertIn(f"lognode{node}: stopped", stop.stdout)
        # mysqld stops before the nodes that hold its redo.
        self.assertLess(stop.stdout.index("mysqld:"), stop.stdout.index("lognode3:"))
        self.assertFalse(ports.answers(self.port))

        status = cli(self.dir, "status")
        self.assertEqual(status.returncode, 3)
        self.assertRegex(status.stdout, r"mysqld\s+down")

        # Restart on the data directory the first up initialised; its redo is
        # read back from the nodes.
        up = cli(self.dir, "up", "--no-setup", "--no-build")
        self.assertEqual(up.returncode, 0, up.stderr)
        self.assertNotIn("initialising", up.stderr)
        row = subprocess.run(shlex.split(connect) + ["-N", "-B", "-e", "SELECT id FROM cli_test.t"],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(row.stdout.strip(), "42", row.stderr)
        cli(self.dir, "stop")

    def test_initialise_again_when_the_nodes_hold_an_orphaned_volume(self):
        # The nodes keep the redo of a data directory that is gone (as after
        # an initialisation that failed): a new --initialize would refuse that
        # volume, so up empties the nodes first and initialises anew.
        cluster_dir = self.dir / "orphan"
        port = ports.free_port(self.port + 20)
        up = cli(cluster_dir, "up", "--no-setup", "--no-build", "--port", str(port))
        self.assertEqual(up.returncode, 0, up.stderr)
        self.assertNotIn("emptying them", up.stderr)
        try:
            self.assertEqual(cli(cluster_dir, "stop").returncode, 0)
            shutil.rmtree(cluster_dir / "mysqld" / "data")
            again = cli(cluster_dir, "up", "--no-setup", "--no-build")
            self.assertEqual(again.returncode, 0, again.stderr)
            self.assertIn("emptying them", again.stderr)
            self.assertIn("initialising", again.stderr)
        finally:
            cli(cluster_dir, "stop")

    def test_port_in_use_is_a_one_line_error(self):
        with tempfile.TemporaryDirectory() as other:
            import socket
            with socket.socket() as busy:
                busy.bind(("127.0.0.1", 0))
                busy.listen()
                port = busy.getsockname()[1]
                out = cli(Path(other), "up", "--no-setup", "--no-build", "--port", str(port))
            self.assertEqual(out.returncode, 1)
            errors = [line for line in out.stderr.splitlines() if line.startswith("error:")]
            self.assertEqual(len(errors), 1, out.stderr)
            self.assertIn("in use", errors[0])

    def test_bad_port_is_refused(self):
        out = cli(self.dir, "up", "--no-setup", "--no-build", "--port", "70000")
        self.assertEqual(out.returncode, 1)
        self.assertIn("not a TCP port", out.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
