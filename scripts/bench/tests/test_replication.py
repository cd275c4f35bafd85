"""replication.py: mode names (the -unordered variants) and the report's ratio table."""
import argparse
import json
import sys
import unittest
from unittest import mock
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import replication as rpl  # noqa: E402


def result(mode, tps, workload="oltp_write_only", threads=64):
    return {"mode": mode, "workload": workload, "threads": threads, "tps": tps, "p95_ms": 10.0,
            "load1": 0.5}


class Modes(unittest.TestCase):
    def test_unordered_suffix(self):
        self.assertEqual(rpl.base_mode("strong-unordered"), "strong")
        self.assertEqual(rpl.base_mode("async"), "async")
        self.assertTrue(rpl.valid_mode("semisync-unordered"))
        self.assertFalse(rpl.valid_mode("strong-sorted"))
        self.assertFalse(rpl.valid_mode("unordered"))

    def test_aftercommit_suffix_for_strong_only(self):
        self.assertEqual(rpl.mode_parts("strong-aftercommit"), ("strong", False, True))
        self.assertEqual(rpl.mode_parts("strong-aftercommit-unordered"), ("strong", True, True))
        self.assertEqual(rpl.mode_parts("strong-unordered"), ("strong", True, False))
        self.assertTrue(rpl.valid_mode("strong-aftercommit-unordered"))
        self.assertFalse(rpl.valid_mode("async-aftercommit"))
        self.assertFalse(rpl.valid_mode("semisync-aftercommit"))
        self.assertFalse(rpl.valid_mode("strong-unordered-aftercommit"))

    def test_normalprio_suffix_for_strong_only(self):
        self.assertEqual(rpl.mode_parts("strong-normalprio"), ("strong", False, False))
        self.assertEqual(rpl.mode_parts("strong-normalprio-aftercommit-unordered"), ("strong", True, True))
        self.assertTrue(rpl.normal_priority("strong-normalprio"))
        self.assertTrue(rpl.normal_priority("strong-normalprio-unordered"))
        self.assertFalse(rpl.normal_priority("strong"))
        self.assertFalse(rpl.normal_priority("strong-aftercommit"))
        self.assertTrue(rpl.valid_mode("strong-normalprio-aftercommit"))
        self.assertFalse(rpl.valid_mode("async-normalprio"))
        self.assertFalse(rpl.valid_mode("strong-aftercommit-normalprio"))

    def test_source_variables_per_mode(self):
        self.assertEqual(rpl.split_mode("strong@strata_sync_source_timeout=500@sync_binlog=1"),
                         ("strong", [("strata_sync_source_timeout", "500"), ("sync_binlog", "1")]))
        self.assertEqual(rpl.mode_parts("strong-aftercommit-unordered@x=1"), ("strong", True, True))
        self.assertTrue(rpl.normal_priority("strong-normalprio@x=1"))
        self.assertTrue(rpl.valid_mode("async@binlog_order_commits=OFF"))
        self.assertFalse(rpl.valid_mode("async-aftercommit@x=1"))
        with self.assertRaises(rpl.BenchError):
            rpl.valid_mode("strong@x=1;DROP DATABASE sbtest")

    def test_a_mode_sets_its_variables_and_the_others_restore_them(self):
        class Fake:
            def __init__(self):
                self.statements = []

            def sql(self, text, timeout=None):
                self.statements.append(text)
                return ""

        defaults = {"strata_sync_source_timeout": "10000"}
        for mode, value in (("strong@strata_sync_source_timeout=500", "500"), ("strong", "10000"),
                            ("async", "10000")):
            src, rep = Fake(), Fake()
            with mock.patch.object(rpl, "wait_for", lambda *a: None):
                rpl.set_mode(src, rep, mode, per_mode_defaults=defaults)
            self.assertIn(f"SET GLOBAL strata_sync_source_timeout = {value}", src.statements, mode)

    def test_source_pool_adds_the_pool_to_the_source_only(self):
        opts = rpl.source_options(True)
        self.assertEqual(opts["thread_handling"], "pool-of-threads")
        self.assertIn("strata_pool.so", opts["plugin-load-add"].split(";"))
        self.assertIn("strata_sync_source.so", opts["plugin-load-add"].split(";"))
        self.assertNotIn("thread_handling", rpl.source_options(False))
        self.assertNotIn("thread_handling", rpl.REPLICA)


class ThreadCpu(unittest.TestCase):
    def test_ticks_are_summed_by_thread_name_per_transaction(self):
        with mock.patch.object(rpl.os, "sysconf", lambda name: 100):
            got = rpl.cpu_by_thread_name({"connection/11": 30, "connection/12": 20, "ib_log_flush/7": 5}, 1000)
        self.assertEqual(got, {"connection": 500.0, "ib_log_flush": 50.0})

    def test_table_has_a_column_per_mode_and_sums_the_small_names(self):
        a = dict(result("async", 1000), source_cpu_us_per_txn_by_thread={"connection": 200.0, "x": 0.2, "y": 0.3})
        b = dict(result("strong", 900), source_cpu_us_per_txn_by_thread={"connection": 220.0, "strata_ackread": 3.0})
        lines = rpl.thread_cpu_table([a, b], ["async", "strong"])
        self.assertIn("| oltp_write_only | 64 | connection | 200.0 | 220.0 |", lines)
        self.assertIn("| oltp_write_only | 64 | strata_ackread | 0.0 | 3.0 |", lines)
        self.assertIn("| oltp_write_only | 64 | 2 others | 0.5 | 0.0 |", lines)

    def test_no_table_without_thread_numbers(self):
        self.assertEqual(rpl.thread_cpu_table([result("async", 1000)], ["async"]), [])


class MachineBudget(unittest.TestCase):
    def test_each_part_per_transaction_and_the_rest_is_other(self):
        hz = rpl.os.sysconf("SC_CLK_TCK")
        # 16 seconds of machine time over 8,000 transactions: 2,000 µs each.
        ticks = {"user": 8 * hz, "system": 4 * hz, "idle": 2 * hz, "iowait": hz, "softirq": hz}
        d = {"machine_ticks": ticks, "source_cpu_s": 6.4, "replica_cpu_s": 0.8, "client_cpu_s": 3.2}
        got = rpl.machine_budget(d, 8000)
        self.assertAlmostEqual(got["total"], 2000, delta=1)
        self.assertAlmostEqual(got["source"], 800)
        self.assertAlmostEqual(got["client"], 400)
        self.assertAlmostEqual(got["idle"], 375, delta=1)
        self.assertAlmostEqual(got["interrupts"], 125, delta=1)
        self.assertAlmostEqual(got["other"], 200, delta=2)

    def test_table_row_per_mode_with_the_means(self):
        rs = [dict(result("async", 100), machine_us_per_txn={"source": 10, "replica": 1, "client": 4,
                                                             "interrupts": 1, "steal": 0, "idle": 2,
                                                             "other": 0, "total": 18}),
              dict(result("async", 100), machine_us_per_txn={"source": 20, "replica": 1, "client": 4,
                                                             "interrupts": 1, "steal": 0, "idle": 0,
                                                             "other": 0, "total": 26})]
        lines = rpl.machine_budget_table(rs, ["async", "strong"])
        self.assertIn("| oltp_write_only | 64 | async | 15 | 1 | 4 | 1 | 0 | 1 | 0 | 22 |", lines)
        self.assertFalse(any("| strong |" in line for line in lines))
        self.assertEqual(rpl.machine_budget_table([result("async", 100)], ["async"]), [])


class Settings(unittest.TestCase):
    def test_plain_names_and_values_are_split(self):
        self.assertEqual(rpl.settings(["replica_parallel_workers=16", "sync_binlog=0"], "--replica-set"),
                         [("replica_parallel_workers", "16"), ("sync_binlog", "0")])

    def test_anything_else_is_refused_naming_the_flag(self):
        for bad in ("replica_parallel_workers", "x=1; DROP DATABASE sbtest", "x='a'", "=1"):
            with self.assertRaises(rpl.BenchError) as e:
                rpl.settings([bad], "--replica-set")
            self.assertIn("--replica-set", str(e.exception))


class Report(unittest.TestCase):
    def test_ratios_to_async_for_every_mode_given(self):
        args = argparse.Namespace(modes="async,strong,strong-unordered")
        results = [result("async", 1000), result("strong", 800), result("strong-unordered", 950),
                   result("async", 1200), result("strong", 1000), result("strong-unordered", 1250)]
        text = rpl.report(results, args, "cmd", "2026-11-25 00:00", (0.1, 0.2, 0.3))
        header = next(line for line in text.splitlines() if line.startswith("| workload | threads | async tps"))
        self.assertIn("strong/async", header)
        self.assertIn("strong-unordered/async", header)
        row = next(line for line in text.splitlines() if line.startswith("| oltp_write_only | 64 | 1100"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        # Means ± 95% half-intervals over the two rounds (t = 12.706); the ratios are the means of the
        # per-round ratios: strong 0.800 and 0.833, unordered 0.950 and 1.042.
        self.assertEqual(cells[2:5], ["1100 ± 1271", "900 ± 1271", "1100 ± 1906"])
        self.assertEqual(cells[5:7], ["0.817 ± 0.212", "0.996 ± 0.582"])
        separator = text.splitlines()[text.splitlines().index(header) + 1]
        self.assertEqual(separator.count("---"), len(header.strip("|").split("|")))


class RoundRatios(unittest.TestCase):
    def test_each_round_against_its_own_async_with_the_mean_and_its_interval(self):
        results = [result("async", 1000), result("strong", 900),   # round 1
                   result("strong", 1100), result("async", 1000),  # round 2, reversed
                   result("async", 800), result("strong", 760)]    # round 3
        lines = rpl.round_ratios(results, ["async", "strong"])
        self.assertIn("- oltp_write_only 64 strong/async: 0.90, 1.10, 0.95 (mean 0.983 ± 0.259)",
                      lines)
        self.assertFalse(any("normalised" in line for line in lines))  # no client CPU measured

    def test_a_verdict_only_for_a_target_the_interval_clears(self):
        def rounds(*ratios):
            out = []
            for q in ratios:
                out += [result("async", 1000), result("strong", 1000 * q)]
            return out
        goals = rpl.st.parse_targets(["strong=0.95"])
        self.assertIn("met (≥ 0.95)", rpl.round_ratios(rounds(0.97, 0.98, 0.975), ["async", "strong"], goals)[-1])
        self.assertIn("not met (≥ 0.95)", rpl.round_ratios(rounds(0.90, 0.91, 0.905), ["async", "strong"], goals)[-1])
        self.assertIn("open (holds 0.95)", rpl.round_ratios(rounds(0.90, 1.00, 0.95), ["async", "strong"], goals)[-1])
        self.assertNotIn("met", rpl.round_ratios(rounds(0.97, 0.98), ["async", "strong"])[-1])

    def test_normalised_by_the_clients_cpu_per_transaction(self):
        def window(mode, tps, client):
            return dict(result(mode, tps), machine_us_per_txn={"client": client})
        # Round 2 ran on a VM 25% slower for strong's window: sysbench took 25% more CPU
        # per transaction there, so its raw 0.80 is 1.00 at one speed.
        results = [window("async", 1000, 600), window("strong", 950, 600),
                   window("strong", 800, 750), window("async", 1000, 600)]
        lines = rpl.round_ratios(results, ["async", "strong"])
        self.assertIn("- oltp_write_only 64 strong/async: 0.95, 0.80 (mean 0.875 ± 0.953)", lines)
        self.assertIn("- oltp_write_only 64 strong/async: 0.95, 1.00 (mean 0.975 ± 0.318)", lines)
        self.assertIn("- all points, strong/async: mean 0.975 ± 0.318 over 2 rounds", lines)

    def test_nothing_without_async(self):
        self.assertEqual(rpl.round_ratios([result("strong", 900)], ["strong"]), [])


class PooledRounds(unittest.TestCase):
    def test_rounds_of_several_runs_pooled_by_point_with_their_own_modes(self):
        import tempfile

        def window(mode, tps, client=600, threads=64):
            return dict(result(mode, tps, threads=threads), machine_us_per_txn={"client": client})
        run1 = [window("async", 1000), window("strong", 900)]
        # A run with a mode under test: its plain strong round pools, the other mode does not.
        run2 = [window("async", 1000), window("strong", 1000, client=660), window("strong@x=1", 500),
                window("async", 1000, threads=256), window("strong", 800, threads=256),
                window("strong@x=1", 500, threads=256)]
        with tempfile.TemporaryDirectory() as d:
            files = []
            for i, run in enumerate((run1, run2)):
                files.append(Path(d) / f"run{i}.jsonl")
                files[-1].write_text("".join(json.dumps(r) + "\n" for r in run))
            lines = rpl.pooled_rounds(files, {"strong"})
        self.assertIn("| oltp_write_only 64 | strong/async | 2 | 0.950 ± 0.635 | 1.000 ± 1.271 |", lines)
        self.assertIn("| oltp_write_only 256 | strong/async | 1 | 0.800 | 0.800 |", lines)
        self.assertEqual(lines[-1], "| all | strong/async | 3 | 0.900 ± 0.248 | 0.933 ± 0.379 |")
        self.assertFalse(any("strong@x=1" in line for line in lines))


class CatchUpPoints(unittest.TestCase):
    def test_every_window_by_default(self):
        self.assertEqual(rpl.catch_up_points(6, 3, 1), {0, 1, 2, 3, 4, 5})

    def test_first_window_of_every_nth_round(self):
        self.assertEqual(rpl.catch_up_points(12, 2, 2), {0, 4, 8})
        self.assertEqual(rpl.catch_up_points(12, 2, 0), {0})


class PausedApplier(unittest.TestCase):
    """--replica-applier paused: the applier stops for the measured run only, also when it fails."""

    class FakeInstance:
        def __init__(self):
            self.statements = []
            self.port = 15000

        def sql(self, text, timeout=None):
            self.statements.append(text)
            return ""

    def run_measure(self, applier, sysbench_fails=False, **window):
        src, rep = self.FakeInstance(), self.FakeInstance()
        args = argparse.Namespace(modes="async", time=1, replica_applier=applier)
        calls = []

        def fake_sysbench(*a):
            calls.append(list(rep.statements))
            if sysbench_fails:
                raise RuntimeError("sysbench failed")
            return "transactions: 10 (10.00 per sec.)\n"

        with mock.patch.multiple(rpl, set_mode=lambda *a, **k: None, catch_up=lambda *a: None,
                                 sysbench=fake_sysbench, counters=lambda *a: {},
                                 delta=lambda after, before: {"source_cpu_s": 0, "replica_cpu_s": 0,
                                                              "Innodb_row_lock_waits": 0,
                                                              "Innodb_row_lock_time": 0,
                                                              "source_context_switches": 0}):
            if sysbench_fails:
                with self.assertRaises(RuntimeError):
                    rpl.measure(src, rep, "async", "oltp_write_only", 4, args, **window)
            else:
                rpl.measure(src, rep, "async", "oltp_write_only", 4, args, **window)
        return calls[0], rep.statements

    def test_paused_stops_the_applier_during_the_run_and_restarts_it(self):
        during, after = self.run_measure("paused")
        self.assertEqual(during, ["STOP REPLICA SQL_THREAD"])
        self.assertEqual(after, ["STOP REPLICA SQL_THREAD", "START REPLICA SQL_THREAD"])

    def test_paused_restarts_the_applier_when_sysbench_fails(self):
        _, after = self.run_measure("paused", sysbench_fails=True)
        self.assertEqual(after[-1], "START REPLICA SQL_THREAD")

    def test_back_to_back_windows_keep_the_applier_stopped(self):
        # The window after one that was not caught up: nothing to stop, nothing restarted.
        during, after = self.run_measure("paused", catch_up_before=False, apply_after=False)
        self.assertEqual(during, [])
        self.assertEqual(after, [])
        # The first of such a run stops it and leaves it stopped.
        during, after = self.run_measure("paused", apply_after=False)
        self.assertEqual(after, ["STOP REPLICA SQL_THREAD"])

    def test_back_to_back_window_restarts_the_applier_when_sysbench_fails(self):
        _, after = self.run_measure("paused", sysbench_fails=True, catch_up_before=False, apply_after=False)
        self.assertEqual(after, ["START REPLICA SQL_THREAD"])

    def test_running_leaves_the_applier_alone(self):
        during, after = self.run_measure("running")
        self.assertEqual(during, [])
        self.assertEqual(after, [])


if __name__ == "__main__":
    unittest.main()
