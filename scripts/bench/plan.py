"""A plan: which points to run on which targets, in which order, and what servers need.

Order. Only one server runs under load at a time (on a small machine two
would share the CPU). Targets alternate point by point and the order flips
every point (A B, B A, A B, ...): drift in the machine (a neighbour, the
page cache, thermal state) lands on both targets alike, and each switch of
server serves two points, so a plan of N points on 2 targets starts a
server N+1 times instead of 2N. Datasets run one after the other.
"""
import math
from dataclasses import dataclass, field

from .scenarios import Dataset, PlanError, Scenario
from .targets import MAX_PREPARED_STMT_LIMIT, ServerNeeds, Target

# sysbench 1.0.20 gives its worker threads a fixed 30 s to start (no option
# changes it), and oltp_common prepares every statement for every table in
# each thread's start-up. Above this many statements in one point the threads
# do not all start in time on a 2-core machine (the whitepaper run of
# 2026-11-23: 375,000 and 641,024 failed, 144,128 started under load), so
# such points send plain statements (--db-ps-mode=disable), for every target
# alike, and the plan and the report say which points did.
PS_STARTUP_LIMIT = 150_000

# For the time estimate only (2-core VM, 9.7.2 RelWithDebInfo, sysbench prepare --threads=2).
PREPARE_ROWS_PER_S = 60_000
PREWARM_BYTES_PER_S = 150 << 20
START_SECONDS = 8


@dataclass(frozen=True)
class Point:
    dataset: Dataset
    scenario: Scenario
    threads: int


@dataclass(frozen=True)
class Step:
    index: int          # 0-based position in the run
    point: Point
    target: Target


@dataclass
class Plan:
    targets: list[Target]
    datasets: list[Dataset]
    points: list[tuple[Scenario, int]]      # per dataset, in this order
    seconds: int
    warmup: int
    settle: int
    pool_bytes: int
    sysbench_extra: list[str] = field(default_factory=list)
    # Each point this many times; the rounds of a dataset run one after the
    # other, so a slow minute of the machine hits one round, not one target.
    rounds: int = 1

    def validate(self) -> None:
        if not self.targets:
            raise PlanError("no target given")
        if not self.points:
            raise PlanError("no scenario given")
        if self.seconds < 1:
            raise PlanError("--time must be at least 1 second")
        if self.warmup < 0 or self.settle < 0:
            raise PlanError("--warmup and --settle cannot be negative")
        if self.rounds < 1:
            raise PlanError("--rounds must be at least 1")
        for sc, threads in self.points:
            if threads < 1:
                raise PlanError(f"scenario {sc.name}: concurrency must be at least 1")
        needs = self.needs()
        assert needs.prepared_stmts <= min(PS_STARTUP_LIMIT, MAX_PREPARED_STMT_LIMIT)

    def steps(self) -> list[Step]:
        out: list[Step] = []
        flip = False
        for ds in self.datasets:
            for _ in range(self.rounds):
                for sc, threads in self.points:
                    order = list(reversed(self.targets)) if flip else list(self.targets)
                    for target in order:
                        out.append(Step(len(out), Point(ds, sc, threads), target))
                    flip = not flip
        return out

    def uses_prepared_statements(self) -> bool:
        return not any(a.replace("_", "-") in ("--db-ps-mode=disable",) for a in self.sysbench_extra)

    def _stmt_need(self, sc: Scenario, threads: int, ds: Dataset) -> int:
        return threads * (sc.stmts_per_table * ds.tables + sc.stmts_per_thread)

    def prepares(self, point: Point) -> bool:
        """Does sysbench prepare this point's statements on the server?"""
        return (self.uses_prepared_statements()
                and self._stmt_need(point.scenario, point.threads, point.dataset) <= PS_STARTUP_LIMIT)

    def sysbench_extra_for(self, point: Point) -> list[str]:
        return list(self.sysbench_extra) + ([] if self.prepares(point) else ["--db-ps-mode=disable"])

    def unprepared_points(self) -> list[Point]:
        """Points that would prepare statements but are too big to (see PS_STARTUP_LIMIT)."""
        if not self.uses_prepared_statements():
            return []
        pts = [Point(ds, sc, thr) for ds in self.datasets for sc, thr in self.points]
        return [p for p in pts if not self.prepares(p)]

    def needs(self) -> ServerNeeds:
        max_threads = max(thr for _, thr in self.points)
        max_tables = max(ds.tables for ds in self.datasets)
        stmts = max([self._stmt_need(sc, thr, ds) for ds in self.datasets for sc, thr in self.points
                     if self.prepares(Point(ds, sc, thr))], default=0)
        return ServerNeeds(max_threads, max_tables, stmts)

    def estimate_seconds(self, prepared: set[tuple[str, str]] = frozenset()) -> int:
        """Rough wall time; `prepared` holds (target slug, dataset slug) already on disk."""
        total = 0.0
        steps = self.steps()
        current = None
        for step in steps:
            key = (step.target.slug, step.point.dataset.slug)
            if key != current:
                total += START_SECONDS
                if key not in prepared:
                    total += step.point.dataset.tables * step.point.dataset.rows / PREPARE_ROWS_PER_S
                    prepared = set(prepared) | {key}
                if step.point.dataset.fits_in_pool:
                    total += step.point.dataset.est_bytes / PREWARM_BYTES_PER_S
                current = key
            total += self.warmup + self.seconds + self.settle + 2
        return int(math.ceil(total))

    def describe(self) -> list[str]:
        lines = [f"targets: {', '.join(t.spec for t in self.targets)} (one at a time, order flips every point)"]
        for ds in self.datasets:
            lines.append(f"dataset {ds.label}: ~{ds.est_bytes / (1 << 30):.2f} GiB of rows, "
                         f"pool {self.pool_bytes / (1 << 30):.2f} GiB")
        for sc, thr in self.points:
            lines.append(f"  {sc.name:<13} {thr:>5} threads   sysbench {sc.command_text()}")
        for p in self.unprepared_points():
            lines.append(f"  {p.scenario.name} at {p.threads} threads on {p.dataset.label}: plain statements "
                         f"(--db-ps-mode=disable): {self._stmt_need(p.scenario, p.threads, p.dataset):,} "
                         f"prepared statements would not start within sysbench's fixed 30 s")
        lines.append(f"each point: {self.warmup}s warm-up + {self.seconds}s measured"
                     + (f" + {self.settle}s pause" if self.settle else "")
                     + (f"; {self.rounds} rounds, the report shows the mean over rounds with a 95% interval"
                        if self.rounds > 1 else ""))
        return lines


def group_points(names_and_threads: list[tuple[Scenario, tuple[int, ...]]]) -> list[tuple[Scenario, int]]:
    out = []
    for sc, threads in names_and_threads:
        for t in threads:
            out.append((sc, t))
    return out


def format_duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{(seconds % 3600) // 60:02d}m"
