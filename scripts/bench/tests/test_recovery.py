"""strata-bench recovery: the LSNs of SHOW ENGINE INNODB STATUS, the error log of a restart,
the per-round ratios and the page's verdict."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import recovery  # noqa: E402

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "recovery_fork_restart.err.txt"

# The LOG section of SHOW ENGINE INNODB STATUS as `mysql -N -B` prints it: one row, newlines escaped.
STATUS_B = ("InnoDB\t\t\\n=====================================\\n2026-11-27 16:46:27 0x7f INNODB MONITOR OUTPUT"
            "\\n---\\nLOG\\n---\\nLog sequence number          1149830824\\nLog buffer assigned up to    1149830824"
            "\\nLog flushed up to            1149830824\\nAdded dirty pages up to      1149830824"
            "\\nPages flushed up to          73642766\\nLast checkpoint at           73642766\\n"
            "Log minimum file id is       6\\n----------------------\\nBUFFER POOL AND MEMORY\\n")


class Status(unittest.TestCase):
    def test_lsn_and_checkpoint_from_mysql_batch_output(self):
        self.assertEqual(recovery.parse_lsns(STATUS_B), (1149830824, 73642766))

    def test_plain_text_too(self):
        self.assertEqual(recovery.parse_lsns(STATUS_B.replace("\\n", "\n")), (1149830824, 73642766))

    def test_missing_lines_are_an_error(self):
        with self.assertRaises(ValueError):
            recovery.parse_lsns("InnoDB\t\t\\nLog sequence number 5\\n")


class StartLog(unittest.TestCase):
    def test_timestamps(self):
        self.assertAlmostEqual(recovery.stamp("2026-11-27T16:43:46.202807Z 1 [Note] x") -
                               recovery.stamp("2026-11-27T16:43:45.202807Z 1 [Note] y"), 1.0, places=5)
        self.assertAlmostEqual(recovery.stamp("2026-11-27T17:43:46.5+01:00 0 [Note] x"),
                               recovery.stamp("2026-11-27T16:43:46.5Z 0 [Note] x"), places=5)
        self.assertIsNone(recovery.stamp("mysqld: Can't open shared library"))

    def test_a_real_restart_after_kill_9(self):
        log = recovery.parse_start_log(FIXTURE.read_text())
        self.assertTrue(log.crashed)
        self.assertEqual(log.checkpoint_lsn, 73642766)
        self.assertEqual(log.scanned_to, 111727835)  # the last "scanned up to", not the first
        self.assertEqual(log.redo_scanned, 111727835 - 73642766)
        self.assertAlmostEqual(log.span("crash_start", "apply_done"), 46.806411 - 46.202807, places=4)
        self.assertAlmostEqual(log.span("crash_start", "apply_start"), 46.557305 - 46.202807, places=4)
        self.assertAlmostEqual(log.span("init_start", "init_end"), 47.232050 - 45.686014, places=4)
        self.assertGreater(log.span("process", "ready"), log.span("init_start", "init_end"))

    def test_only_the_last_start_counts(self):
        earlier = ("2026-11-27T10:00:00.000000Z 0 [System] [MY-010116] [Server] mysqld (mysqld 9.7.2) "
                   "starting as process 1\n"
                   "2026-11-27T10:00:01.000000Z 1 [Note] [MY-012552] [InnoDB] Starting crash recovery.\n")
        log = recovery.parse_start_log(earlier + FIXTURE.read_text())
        self.assertAlmostEqual(log.span("crash_start", "apply_done"), 46.806411 - 46.202807, places=4)

    def test_a_clean_start_has_no_recovery(self):
        text = "\n".join(ln for ln in FIXTURE.read_text().splitlines()
                         if "crash" not in ln and "scanned" not in ln and "parse redo" not in ln
                         and "Apply" not in ln and "not shutdown" not in ln)
        log = recovery.parse_start_log(text)
        self.assertFalse(log.crashed)
        self.assertIsNone(log.redo_scanned)
        self.assertIsNone(log.span("crash_start", "apply_done"))
        self.assertIsNotNone(log.span("process", "ready"))

    def test_x_plugin_is_not_the_server_being_ready(self):
        self.assertIsNone(recovery.EVENTS[-1][1].search(
            "2026-11-27T16:43:47.9Z 0 [System] [MY-011323] [Server] X Plugin ready for connections. Bind-address"))


def sample(rnd, target, restart, recovery_s=1.0):
    return recovery.Sample(rnd, target, 1 << 30, 2 << 30, 1 << 30, 10.0, restart, 5.0, recovery_s, 0.5, 1 << 30, True)


class Page(unittest.TestCase):
    def test_ratios_are_per_round(self):
        ss = [sample(1, "stock", 10.0), sample(1, "fork", 12.0), sample(2, "fork", 30.0), sample(2, "stock", 20.0),
              sample(3, "stock", 10.0)]  # round 3 has no fork sample: no ratio
        self.assertEqual(recovery.ratios(ss, "stock", "fork"), [1.2, 1.5])

    def test_page_has_intervals_and_a_verdict(self):
        ss = [sample(1, "stock", 10.0), sample(1, "fork", 12.0), sample(2, "fork", 11.0), sample(2, "stock", 10.0),
              sample(3, "stock", 10.0), sample(3, "fork", 11.5)]
        meta = {"started": 0, "redo_mib": 1024, "command": "scripts/strata-bench recovery", "uptime": "up",
                "load_before": (1, 1, 1), "load_after": (2, 2, 2), "versions": {"stock": "9.7.2"}, "rounds": 3,
                "elapsed": 600, "options": recovery.server_options(1024)}
        page = recovery.render(meta, ss, ["stock", "fork"], 1.5)
        self.assertIn("1.150 ± ", page)  # the mean of 1.2, 1.1, 1.15
        self.assertIn("target ≤ 1.5: met", page)
        self.assertIn("| 3 | `fork` | 1024 |", page)
        self.assertIn("reading + parsing the redo alone: 1.000 ± 0.000", page)
        self.assertIn("`innodb_redo_log_capacity=8589934592`", page)
        self.assertIn("scripts/strata-bench recovery", page)

    def test_one_round_has_no_verdict(self):
        meta = {"started": 0, "redo_mib": 256, "command": "c", "uptime": "", "load_before": (0, 0, 0),
                "load_after": (0, 0, 0), "versions": {}, "rounds": 1, "elapsed": 60, "options": {}}
        page = recovery.render(meta, [sample(1, "stock", 10.0), sample(1, "fork", 20.0)], ["stock", "fork"], 1.5)
        self.assertIn("no verdict with one round", page)


class Options(unittest.TestCase):
    def test_capacity_is_eight_times_the_redo_and_at_least_4_gib(self):
        self.assertEqual(recovery.server_options(256)["innodb_redo_log_capacity"], str(4 << 30))
        self.assertEqual(recovery.server_options(1024)["innodb_redo_log_capacity"], str(8 << 30))
        self.assertEqual(recovery.server_options(1000)["innodb_redo_log_capacity"], str(8 << 30))

    def test_the_subcommand_parses(self):
        from bench import cli
        a = cli.parser().parse_args(["recovery", "--redo-mib", "256", "--rounds", "2", "--target-ratio", "1.4"])
        self.assertEqual((a.redo_mib, a.rounds, a.target_ratio), (256, 2, 1.4))


if __name__ == "__main__":
    unittest.main()
