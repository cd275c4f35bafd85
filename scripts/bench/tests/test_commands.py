"""strata-bench's command line: every subcommand parses, the old scripts' jobs are subcommands,
--target-ratio is checked before anything starts, and the kinds get their defaults."""
import contextlib
import io
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import cli, netns  # noqa: E402


class Parsing(unittest.TestCase):
    def parse(self, *argv):
        return cli.parser().parse_args(list(argv))

    def test_the_subcommands_that_replaced_the_scripts(self):
        text = cli.parser().format_help()
        for name in ("run", "plan", "list", "report", "anatomy", "clean",
                     "interleave", "cost", "audit", "replication", "client-netns"):
            self.assertIn(name, text)
        old = Path(cli.__file__).parent
        for script in ("interleave.py", "replication.py", "audit_cycles.py"):
            self.assertFalse((old / script).read_text().startswith("#!") if (old / script).exists() else False,
                             f"{script} is a script again")
        for script in ("audit_build_ab.sh", "audit_policy_switch.sh", "cost_per_query.sh", "cpu_per_query.sh",
                       "netns_client.sh"):
            self.assertFalse((old / script).exists(), script)

    def test_run_options_are_kept(self):
        a = self.parse("run", "--preset", "quick", "--scenario", "write", "--threads", "16,64", "--rounds", "3",
                       "--target", "stock", "--target", "fork", "--time", "5", "--warmup", "2",
                       "--target-ratio", "write=0.8", "--report", "x.md", "--client-policy", "batch")
        self.assertEqual((a.rounds, a.time, a.warmup, a.target_ratio), (3, 5, 2, ["write=0.8"]))
        self.assertEqual(self.parse("report", "dir", "--target-ratio", "*=1").target_ratio, ["*=1"])
        self.assertEqual(self.parse("anatomy", "--threads", "1").threads, ["1"])
        self.assertEqual(self.parse("clean", "--target", "stock").target, ["stock"])

    def test_kinds_share_the_plan_options(self):
        for sub in ("interleave", "cost", "audit"):
            a = self.parse(sub, "--target", "fork", "--dataset", "2x100", "--rounds", "2", "--time", "5",
                           "--warmup", "2", "--port", "14000", "--target-ratio", "read-point=0.9")
            self.assertEqual((a.rounds, a.port, a.dataset), (2, 14000, ["2x100"]))

    def test_kind_defaults(self):
        a = self.parse("interleave", "--target", "fork", "--target", "fork:thread_handling=pool-of-threads")
        self.assertEqual(type(cli.kind_of(a)).__name__, "Interleave")
        self.assertEqual((a.scenario, a.threads), (["read-point"], ["128"]))
        a = self.parse("audit", "--policies", "NONE,ALL")
        kind = cli.kind_of(a)
        self.assertEqual(a.target, ["fork:plugin-load-add=strata_audit.so"])
        self.assertEqual((a.scenario, a.threads, kind.policies), (["read-point"], ["16"], ("NONE", "ALL")))
        a = self.parse("cost", "--scenario", "write", "--warmup", "0")
        with self.assertRaises(cli.PlanError):
            cli.kind_of(a)

    def test_replication_options(self):
        a = self.parse("replication", "--time", "5", "--rounds", "2", "--modes", "async,strong",
                       "--threads", "4", "--target-ratio", "strong=0.95", "--source-pool")
        self.assertEqual((a.time, a.rounds, a.modes, a.source_pool), (5, 2, "async,strong", True))
        self.assertEqual(self.parse("client-netns", "down").action, "down")

    def test_a_bad_target_ratio_is_one_error_line(self):
        err = io.StringIO()
        with contextlib.redirect_stderr(err), self.assertRaises(SystemExit) as e:
            cli.main(["run", "--target-ratio", "write=fast", "--dataset", "2x100"])
        self.assertEqual(e.exception.code, 1)
        self.assertEqual(err.getvalue(), "error: --target-ratio 'write=fast': use SCENARIO[@THREADS]=RATIO, "
                                         "e.g. write=0.8\n")


class Netns(unittest.TestCase):
    def test_set_up_order_names_the_namespace_and_links(self):
        cmds = netns.up_commands(Path("/tmp/x"))
        self.assertEqual(cmds[0], ["ip", "netns", "add", netns.NS])
        self.assertEqual(cmds[-1][:4], ["ip", "netns", "exec", netns.NS])
        self.assertIn("ListenAddress=10.77.0.2", cmds[-1])
        self.assertIn("IdentityFile /tmp/x/client_key", netns.ssh_config(Path("/tmp/x")))


if __name__ == "__main__":
    unittest.main()
