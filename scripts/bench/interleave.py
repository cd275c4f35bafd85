"""strata-bench interleave: targets up side by side, short windows to each in turn.

    scripts/strata-bench interleave --scenario read-point --threads 128 --dataset 10x25000 \\
        --target fork --target fork:plugin-load-add=strata_pool.so,thread_handling=pool-of-threads \\
        --rounds 10 --warmup 3 --time 10

On a shared VM the machine's speed drifts by 10-20% over minutes, so two
points measured a minute apart (`run`'s A B, B A order, one server at a
time) can differ by more than what is compared. Here every target's server
is started once per dataset, all of them at the same time (each on its own
port and data directory, as `run` prepares them), and then one sysbench
window after another goes to each in turn (A B C, C B A, ...); only the
loaded one does work. A round gives one ratio per target against the first,
measured within seconds, and the page gives the mean of those ratios with
its 95% interval, as every strata-bench page does.

A window is the same sysbench command line and parser as `run` (warm-up
checkpoint, then the measured seconds). A window whose sysbench fails or
never reaches its checkpoint (under thousands of clients its reporting
thread can starve) is kept in points.csv as failed, with the reason; its
round then has no ratio for that target, and the page counts such rounds.
Every server must fit in memory at once: give --pool accordingly.
"""
from .kind import Kind
from .runner import Runner, Server


class InterleavedRunner(Runner):
    """Runner whose servers of one dataset all run at once; points alternate between them."""

    def run(self, csv, on_result=None):
        steps = self.plan.steps()
        for ds in self.plan.datasets:
            servers: dict[str, Server] = {}
            for target in self.plan.targets:
                servers[target.slug] = self.start(target, ds)
            for step in (s for s in steps if s.point.dataset == ds):
                srv = servers[step.target.slug]
                if not srv.running():
                    self.progress.say(f"{srv.name}: mysqld is no longer running; restarting it")
                    srv = servers[step.target.slug] = self.start(step.target, ds)
                result = self.run_point(step, srv)
                self.results.append(result)
                csv.add(result)
                if on_result:
                    on_result(result)
                if self.plan.settle:
                    self.sleep(self.plan.settle)
            for target in reversed(self.plan.targets):
                self.stop(servers[target.slug])
        return self.results


class Interleave(Kind):
    name = "interleave"
    runner_class = InterleavedRunner
    setup = ["interleaved: every target's server runs for the whole dataset, all at once; windows go to "
             "each in turn (A B, B A, ...), so a round's windows are seconds apart and only the loaded "
             "server works"]

    def sections(self, runner, out_dir):
        failed = [r for r in runner.results if r.status != "ok"]
        if not failed:
            return []
        return [f"{len(failed)} of {len(runner.results)} windows failed and left their round without a ratio "
                "for that target (kept in points.csv with the reason): "
                + "; ".join(sorted({f'{r.target}: {r.error}' for r in failed}))]


def main_args(sub, plan_args, run_args) -> None:
    p = sub.add_parser("interleave", help="targets up side by side, short windows to each in turn "
                                          "(replaces scripts/bench/interleave.py)",
                       description=__doc__.split("\n\n")[0])
    plan_args(p)
    run_args(p)
