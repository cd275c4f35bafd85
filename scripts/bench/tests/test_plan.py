"""Plans: datasets scaled to the pool, presets, targets, the alternating order, server needs."""
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from bench import scenarios as scn  # noqa: E402
from bench.plan import Plan, group_points  # noqa: E402
from bench.scenarios import PlanError  # noqa: E402
from bench.targets import (MAX_PREPARED_STMT_LIMIT, ServerNeeds, parse_target, parse_targets,  # noqa: E402
                           prepared_stmt_limit, server_options)

FLAVORS = {"stock": None, "fork": None}
GiB = 1 << 30


def plan(targets=("stock", "fork"), points=(("read-point", (4, 32)),), datasets=("8x10000",), pool=GiB, **kw):
    p = Plan(parse_targets(list(targets), FLAVORS), [scn.dataset(d, pool) for d in datasets],
             group_points([(scn.scenario(n), t) for n, t in points]), kw.get("seconds", 10), kw.get("warmup", 5),
             kw.get("settle", 0), pool, kw.get("extra", []), kw.get("rounds", 1))
    p.validate()
    return p


class Datasets(unittest.TestCase):
    def test_full_cache_keeps_whitepaper_shape_when_it_fits(self):
        ds = scn.dataset("full", 3 * GiB)
        self.assertEqual((ds.tables, ds.rows), (250, 25_000))
        self.assertLess(ds.est_bytes, 3 * GiB * scn.FULL_FILL)

    def test_full_cache_shrinks_to_the_pool(self):
        ds = scn.dataset("full", 1 * GiB)
        self.assertEqual(ds.rows, 25_000)
        self.assertLess(ds.tables, 250)
        self.assertLessEqual(ds.est_bytes, GiB * scn.FULL_FILL)

    def test_big_is_about_twice_the_pool(self):
        ds = scn.dataset("big", 3 * GiB)
        self.assertEqual(ds.rows, 800_000)
        self.assertGreaterEqual(ds.est_bytes, 2 * 3 * GiB)
        self.assertLess(ds.est_bytes, 2 * 3 * GiB + 800_000 * scn.ROW_BYTES)
        self.assertFalse(ds.fits_in_pool)

    def test_fixed_and_bad(self):
        self.assertEqual(scn.dataset("10x25000", GiB).slug, "10x25000")
        for bad in ("huge", "0x10", "10x", "x5"):
            with self.assertRaises(PlanError):
                scn.dataset(bad, GiB)

    def test_sizes(self):
        self.assertEqual(scn.parse_size("3G", 0), 3 * GiB)
        self.assertEqual(scn.parse_size("512M", 0), 512 << 20)
        self.assertEqual(scn.parse_size("25%", 8 * GiB), 2 * GiB)
        for bad in ("lots", "95%", "-1G"):
            with self.assertRaises(PlanError):
                scn.parse_size(bad, 8 * GiB)


class Targets(unittest.TestCase):
    def test_overrides(self):
        t = parse_target("fork:thread_handling=pool-of-threads,skip-name-resolve", FLAVORS)
        self.assertEqual(t.flavor, "fork")
        self.assertEqual(t.overrides, (("thread_handling", "pool-of-threads"), ("skip-name-resolve", None)))
        self.assertEqual(t.slug, "fork-thread_handling-pool-of-threads-skip-name-resolve")
        self.assertEqual(parse_target("stock", FLAVORS).slug, "stock")

    def test_long_slug_is_bounded_and_distinct(self):
        a = parse_target("fork:" + ",".join(f"opt{i}=1" for i in range(30)), FLAVORS)
        b = parse_target("fork:" + ",".join(f"opt{i}=2" for i in range(30)), FLAVORS)
        self.assertLessEqual(len(a.slug), 60)
        self.assertNotEqual(a.slug, b.slug)

    def test_bad_targets(self):
        for bad in ("mariadb", "fork:=1", "fork:a b=1"):
            with self.assertRaises(PlanError, msg=bad):
                parse_target(bad, FLAVORS)
        with self.assertRaises(PlanError):
            parse_targets(["fork", "fork"], FLAVORS)

    def test_unknown_scenario_and_preset(self):
        with self.assertRaises(PlanError) as e:
            scn.scenario("oltp_bogus")
        self.assertIn("known:", str(e.exception))
        self.assertNotIn("\n", str(e.exception))
        with self.assertRaises(PlanError):
            scn.preset("nightly")


class Order(unittest.TestCase):
    def test_order_flips_every_point(self):
        p = plan(points=(("read-point", (4, 32)), ("write", (4,))))
        seq = [(s.point.scenario.name, s.point.threads, s.target.spec) for s in p.steps()]
        self.assertEqual(seq, [("read-point", 4, "stock"), ("read-point", 4, "fork"),
                               ("read-point", 32, "fork"), ("read-point", 32, "stock"),
                               ("write", 4, "stock"), ("write", 4, "fork")])
        # each switch of server serves two points: 3 points x 2 targets -> 4 server starts
        starts = sum(1 for a, b in zip([None] + seq, seq) if a is None or a[2] != b[2])
        self.assertEqual(starts, 4)

    def test_rounds_repeat_the_points_and_keep_alternating(self):
        p = plan(points=(("read-point", (4,)),), rounds=3)
        seq = [s.target.spec for s in p.steps()]
        self.assertEqual(seq, ["stock", "fork", "fork", "stock", "stock", "fork"])
        self.assertIn("3 rounds", "\n".join(p.describe()))
        with self.assertRaises(scn.PlanError):
            plan(rounds=0)

    def test_three_targets_and_two_datasets(self):
        p = plan(targets=("stock", "fork", "fork:a=1"), datasets=("2x10", "3x10"))
        targets = [s.target.spec for s in p.steps()]
        self.assertEqual(targets[:6], ["stock", "fork", "fork:a=1", "fork:a=1", "fork", "stock"])
        self.assertEqual(len(p.steps()), 2 * 2 * 3)
        self.assertEqual([s.index for s in p.steps()], list(range(12)))

    def test_every_preset_plans(self):
        for name, pr in scn.PRESETS.items():
            pool = scn.parse_size(pr.pool, 24 * GiB)
            if pr.pool_cap:
                pool = min(pool, scn.parse_size(pr.pool_cap, 24 * GiB))
            p = plan(points=pr.points, datasets=pr.datasets, pool=pool, seconds=pr.seconds, warmup=pr.warmup)
            est = p.estimate_seconds()
            self.assertGreater(est, 0)
            if name == "quick":
                self.assertLess(est, 10 * 60)
            if name == "whitepaper":
                self.assertLess(est, 90 * 60, "the whitepaper preset must fit in 90 minutes on 24 GiB")


class ServerNeedsTest(unittest.TestCase):
    def test_prepared_statements_scale(self):
        p = plan(points=(("rw-point", (96,)),), datasets=("250x100",))
        needs = p.needs()
        self.assertEqual(needs.prepared_stmts, 96 * (5 * 250 + 2))
        opts = server_options(GiB, needs)
        self.assertGreaterEqual(int(opts["max_prepared_stmt_count"]), needs.prepared_stmts)
        self.assertGreaterEqual(int(opts["max_connections"]), 96)
        self.assertIn("skip-log-bin", opts)
        self.assertIsNone(opts["skip-log-bin"])
        self.assertEqual(opts["innodb_flush_log_at_trx_commit"], "1")
        self.assertEqual(opts["innodb_buffer_pool_size"], str(GiB))

    def test_default_limit_kept_when_small(self):
        self.assertEqual(prepared_stmt_limit(100), 16382)
        self.assertEqual(prepared_stmt_limit(10 ** 9), MAX_PREPARED_STMT_LIMIT)

    def test_points_too_big_to_prepare_send_plain_statements(self):
        p = plan(points=(("rw-range", (4000, 16)),), datasets=("250x100",))
        big, small = [s.point for s in p.steps()][::2][:2]
        self.assertEqual((big.threads, small.threads), (4000, 16))
        self.assertIn("--db-ps-mode=disable", p.sysbench_extra_for(big))
        self.assertNotIn("--db-ps-mode=disable", p.sysbench_extra_for(small))
        self.assertEqual(p.unprepared_points(), [big])
        self.assertEqual(p.needs().prepared_stmts, p._stmt_need(small.scenario, 16, small.dataset))
        self.assertIn("plain statements", "\n".join(p.describe()))
        p = plan(points=(("rw-range", (4000,)),), datasets=("250x100",), extra=["--db-ps-mode=disable"])
        self.assertEqual(p.needs().prepared_stmts, 0)
        self.assertEqual(p.unprepared_points(), [])

    def test_overrides_win(self):
        opts = server_options(GiB, ServerNeeds(16, 8, 0), {"innodb_flush_log_at_trx_commit": "2"})
        self.assertEqual(opts["innodb_flush_log_at_trx_commit"], "2")


class TargetListTest(unittest.TestCase):
    """--target splits on commas between targets, not between one target's options."""

    def test_options_stay_with_their_target(self):
        from bench.cli import _target_list
        self.assertEqual(_target_list(["fork:a=1,b=2"]), ["fork:a=1,b=2"])
        self.assertEqual(_target_list(["stock,fork:a=1,b=2,stock:c=3"]), ["stock", "fork:a=1,b=2", "stock:c=3"])
        self.assertEqual(_target_list(["stock", "fork:thread_handling=pool-of-threads"]),
                         ["stock", "fork:thread_handling=pool-of-threads"])


if __name__ == "__main__":
    unittest.main()
