"""strata-bench audit: which perf samples count as the audit plugin's cost; policies in turn on one server."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import audit as ac  # noqa: E402

MYSQLD = "(/x/bin/mysqld)"
PLUGIN = "(/x/plugin/strata_audit.so)"
KERNEL = "([kernel.kallsyms])"

# Five samples as `perf script -F comm,tid,ip,sym,dso` prints them: a query in
# the executor, a session inside the plugin, the writer formatting, the
# writer's writev with its chain cut at libc, the idle task.
PERF_SCRIPT = f"""connection  3256 
\t          e9c747 THD::inc_sent_row_count {MYSQLD}
\t          f47616 do_command {MYSQLD}

connection  3256 
\t           27d36 strata_audit::AuditLog::append {PLUGIN}
\t           b49d (anonymous namespace)::notify_general {PLUGIN}
\t          f47616 do_command {MYSQLD}

mysqld  3097 
\t           21dd5 strata_audit::append_json_chars {PLUGIN}
\t           28079 strata_audit::AuditLog::writer_main {PLUGIN}

mysqld  3097 
\tffffffff815a0814 generic_perform_write {KERNEL}
\t           fde9d __GI___writev (/usr/lib/libc.so.6)

swapper     0 
\tffffffff81000000 default_idle {KERNEL}
"""  # noqa: W291 (perf ends each sample's header line with a space)


class Classify(unittest.TestCase):
    def test_parse_keeps_comm_tid_and_frames(self):
        samples = list(ac.parse_perf_script(PERF_SCRIPT))
        self.assertEqual([(c, t) for c, t, _ in samples],
                         [("connection", 3256), ("connection", 3256), ("mysqld", 3097), ("mysqld", 3097),
                          ("swapper", 0)])
        self.assertEqual(len(samples[1][2]), 3)

    def test_counts(self):
        c = ac.classify(ac.parse_perf_script(PERF_SCRIPT))
        self.assertEqual(c["total"], 5)
        self.assertEqual(c["idle"], 1)
        self.assertEqual(c["session"], 1)
        # The writev sample has no plugin frame: it counts by its thread.
        self.assertEqual(c["writer"], 2)

    def test_server_dispatch_counts_as_session(self):
        text = f"connection  7 \n\t 1 mysql_audit_acquire_plugins {MYSQLD}\n\t 2 do_command {MYSQLD}\n"
        self.assertEqual(ac.classify(ac.parse_perf_script(text))["session"], 1)


class Policies(unittest.TestCase):
    def test_order_flips_every_point(self):
        self.assertEqual(ac.policy_order(0, ("NONE", "ALL")), ["NONE", "ALL"])
        self.assertEqual(ac.policy_order(1, ("NONE", "ALL")), ["ALL", "NONE"])

    def test_parse(self):
        self.assertEqual(ac.parse_policies("none, all"), ("NONE", "ALL"))
        for bad in ("ALL", "ALL,ALL", "ALL,SOME"):
            with self.subTest(bad=bad), self.assertRaises(ac.BenchError):
                ac.parse_policies(bad)

    def test_ratio_table_pairs_policies_within_a_round(self):
        from bench import report as rp
        from bench import stats as st

        def r(seq, policy, qps, status="ok"):
            return rp.PointResult(seq=seq, dataset="d", tables=1, rows=1, scenario="read-point", threads=16,
                                  target=f"fork:plugin-load-add=strata_audit.so {policy}", status=status, qps=qps)
        rows = [r(1, "NONE", 1000), r(2, "ALL", 970), r(3, "ALL", 960), r(4, "NONE", 1000),
                r(5, "NONE", 1000), r(6, "ALL", 980)]
        table = ac.ratio_table(rows, ("NONE", "ALL"), st.parse_targets(["*=0.9"]))
        self.assertIn("| read-point | 16 | fork:plugin-load-add=strata_audit.so | 0.970 ± 0.025 (n=3) | met (≥ 0.9) |",
                      table)


class AuditRunnerTest(unittest.TestCase):
    def test_each_point_runs_every_policy_on_the_same_server(self):
        import io
        import os
        import tempfile
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import fakes
        from bench.plan import Plan
        from bench.report import CsvLog
        from bench.runner import Progress
        from bench.scenarios import Dataset, scenario
        from bench.targets import parse_targets

        statements = []

        class Server(fakes.FakeServer):
            def sql(self, statement):
                statements.append(statement)
                return ""
        os.environ["FAKE_SB_TICK"] = "0.002"
        try:
            with tempfile.TemporaryDirectory() as d:
                work = Path(d)
                plan = Plan(parse_targets(["fork"], {"fork": 0}), [Dataset("fixed", 2, 100)],
                            [(scenario("read-point"), 4)], seconds=2, warmup=1, settle=0, pool_bytes=1 << 30,
                            rounds=2)
                runner = ac.AuditRunner(plan, Server, work / "data", work / "out", 23406,
                                        sysbench_bin=str(fakes.FAKE_SYSBENCH), progress=Progress(io.StringIO()))
                csv = CsvLog(work / "points.csv")
                try:
                    results = runner.run(csv)
                finally:
                    runner.close()
                    csv.close()
                self.assertEqual([r.target for r in results], ["fork NONE", "fork ALL", "fork ALL", "fork NONE"])
                self.assertTrue(all(r.status == "ok" for r in results))
                self.assertEqual(len({r.seq for r in results}), 4)
                self.assertEqual(len(list((work / "out" / "raw").glob("*.txt"))), 4)   # raw output of each window
                self.assertEqual([s for s in statements if "audit_log_policy" in s],
                                 [f"SET GLOBAL audit_log_policy = {p}" for p in ("NONE", "ALL", "ALL", "NONE")])
                self.assertEqual([e for e, _ in fakes.FakeServer.log].count("stop"), 2)   # prepare restart + end
        finally:
            os.environ.pop("FAKE_SB_TICK", None)


if __name__ == "__main__":
    unittest.main()
