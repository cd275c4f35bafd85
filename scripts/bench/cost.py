"""strata-bench cost: what a query costs the machine, besides how many run.

    scripts/strata-bench cost --scenario read-point --threads 16,2048 --target fork \\
        --target fork:plugin-load-add=strata_pool.so,thread_handling=pool-of-threads --rounds 3

Each point is a `run` point (same servers, sysbench command line, warm-up
checkpoint and parser; targets alternate, one server at a time). Around the
measured window (from sysbench's warm-up checkpoint to its final report,
so a connection storm at 2,048 threads stays out of it) the runner reads
/proc and divides by the queries of the window:

    mysqld_us_q     mysqld's CPU (utime + stime, all threads) per query
    sysbench_us_q   sysbench's CPU per query (the client shares the CPUs)
    mysqld_cpus     CPUs mysqld kept busy; sysbench_cpus the same for it
    busy_pct        the machine's busy share (/proc/stat)
    vcs_q, nvcs_q   voluntary / involuntary context switches of mysqld's
                    threads alive at both ends, per query

Less sensitive to other load on the machine than QPS. The figures of every
window go to costs.csv beside points.csv; the page gives each one's mean
over rounds with its 95% interval, and the per-round ratio of mysqld's CPU
per query to the first target's. (Replaces the one-off cost_per_query.sh
and cpu_per_query.sh.)
"""
import csv
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from . import report as rp
from . import stats as st
from .kind import Kind
from .runner import Runner

HZ = os.sysconf("SC_CLK_TCK")


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def process_ticks(stat_text: str) -> int:
    """utime + stime of /proc/PID/stat (clock ticks); 0 when the process is gone."""
    if ")" not in stat_text:
        return 0
    f = stat_text.rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


def switches(status_texts) -> tuple[int, int]:
    """(voluntary, involuntary) context switches summed over /proc/PID/task/*/status texts."""
    v = n = 0
    for text in status_texts:
        for line in text.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                v += int(line.split()[1])
            elif line.startswith("nonvoluntary_ctxt_switches:"):
                n += int(line.split()[1])
    return v, n


def machine_ticks(proc_stat: str) -> tuple[int, int]:
    """(busy, idle) clock ticks of /proc/stat's cpu line (idle = idle + iowait)."""
    f = [int(x) for x in proc_stat.split("\n", 1)[0].split()[1:9]]
    user, nice, system, idle, iowait, irq, softirq, steal = (f + [0] * 8)[:8]
    return user + nice + system + irq + softirq + steal, idle + iowait


@dataclass
class Snapshot:
    mysqld: int
    sysbench: int
    busy: int
    idle: int
    vcs: int
    nvcs: int


def snapshot(mysqld_pid: int | None, sysbench_pid: int | None) -> Snapshot:
    tasks = Path(f"/proc/{mysqld_pid}/task")
    texts = []
    if mysqld_pid and tasks.exists():
        for task in tasks.iterdir():
            texts.append(_read(str(task / "status")))
    busy, idle = machine_ticks(_read("/proc/stat"))
    v, n = switches(texts)
    return Snapshot(process_ticks(_read(f"/proc/{mysqld_pid}/stat")) if mysqld_pid else 0,
                    process_ticks(_read(f"/proc/{sysbench_pid}/stat")) if sysbench_pid else 0, busy, idle, v, n)


@dataclass
class Cost:
    seq: int
    scenario: str
    dataset: str
    threads: int
    target: str
    queries: int
    seconds: float
    mysqld_us_q: float
    sysbench_us_q: float
    mysqld_cpus: float
    sysbench_cpus: float
    busy_pct: float
    vcs_q: float
    nvcs_q: float

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]


FIGURES = [("mysqld_us_q", "mysqld µs/query", ".1f"), ("sysbench_us_q", "sysbench µs/query", ".1f"),
           ("mysqld_cpus", "mysqld CPUs", ".2f"), ("sysbench_cpus", "sysbench CPUs", ".2f"),
           ("busy_pct", "machine busy %", ".0f"), ("vcs_q", "mysqld vcs/query", ".2f"),
           ("nvcs_q", "mysqld nvcs/query", ".2f")]


def cost_of(a: Snapshot, b: Snapshot, queries: int, seconds: float, hz: int = HZ) -> dict:
    q = max(queries, 1)
    total = (b.busy - a.busy) + (b.idle - a.idle)
    return {"mysqld_us_q": (b.mysqld - a.mysqld) / hz / q * 1e6,
            "sysbench_us_q": (b.sysbench - a.sysbench) / hz / q * 1e6,
            "mysqld_cpus": (b.mysqld - a.mysqld) / hz / max(seconds, 1e-9),
            "sysbench_cpus": (b.sysbench - a.sysbench) / hz / max(seconds, 1e-9),
            "busy_pct": 100.0 * (b.busy - a.busy) / total if total else 0.0,
            "vcs_q": max(0, b.vcs - a.vcs) / q, "nvcs_q": max(0, b.nvcs - a.nvcs) / q}


class WindowWatch:
    """Follows sysbench's lines: the start snapshot at the warm-up checkpoint, the end one when the
    final report starts (the first 'SQL statistics:' after an interval line past the checkpoint)."""

    def __init__(self, take):
        self.take = take
        self.start = self.end = None
        self._t0 = self._t1 = None
        self._past_checkpoint_interval = False

    def line(self, text: str, now: float) -> None:
        if self.start is None:
            if "] Checkpoint report:" in text:
                self.start, self._t0 = self.take(), now
            return
        if self.end is None:
            if text.startswith("[") and " thds: " in text:
                self._past_checkpoint_interval = True
            elif text.startswith("SQL statistics:") and self._past_checkpoint_interval:
                self.end, self._t1 = self.take(), now

    @property
    def seconds(self) -> float | None:
        return None if self._t1 is None else self._t1 - self._t0


class CostRunner(Runner):
    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.costs: list[Cost] = []
        self._watch: WindowWatch | None = None

    def on_point_line(self, step, srv, line):
        import time
        if self._watch is None:
            inst = getattr(srv, "instance", None)
            mysqld_pid = inst.pid() if inst else None
            sb_pid = self.started.procs[-1].pid if self.started.procs and not self.client else None
            self._watch = WindowWatch(lambda: snapshot(mysqld_pid, sb_pid))
        self._watch.line(line, time.monotonic())

    def run_point(self, step, srv):
        self._watch = None
        result = super().run_point(step, srv)
        w = self._watch
        if result.status == "ok" and w and w.start and w.end:
            queries = (result.reads or 0) + (result.writes or 0) + (result.other or 0)
            queries = queries or int((result.qps or 0) * self.plan.seconds)
            c = cost_of(w.start, w.end, queries, w.seconds or self.plan.seconds)
            p = step.point
            self.costs.append(Cost(result.seq, p.scenario.name, p.dataset.label, p.threads, step.target.spec,
                                   queries, round(w.seconds or 0, 2), **c))
            self.progress.say(f"  cost: mysqld {c['mysqld_us_q']:.1f} µs/query, sysbench {c['sysbench_us_q']:.1f}, "
                              f"machine busy {c['busy_pct']:.0f}%, mysqld switches {c['vcs_q']:.2f}+{c['nvcs_q']:.2f}/query")
        return result


def write_csv(path: Path, costs: list[Cost]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=Cost.columns())
        w.writeheader()
        for c in costs:
            w.writerow(asdict(c))


def read_csv(path: Path) -> list[Cost]:
    with open(path, newline="") as f:
        out = []
        for row in csv.DictReader(f):
            kw = {k: (int(v) if k in ("seq", "threads", "queries") else
                      v if k in ("scenario", "dataset", "target") else float(v)) for k, v in row.items()}
            out.append(Cost(**kw))
        return out


def cost_table(costs: list[Cost]) -> str:
    """Per point and target: every figure's mean ± 95% half-interval over rounds; then the per-round
    ratio of mysqld's CPU per query to the first target's."""
    if not costs:
        return ""
    targets = list(dict.fromkeys(c.target for c in costs))
    points = list(dict.fromkeys((c.scenario, c.dataset, c.threads) for c in costs))
    head = ["scenario", "dataset", "threads", "target", "rounds"] + [label for _, label, _ in FIGURES]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 5 + "---:|" * len(FIGURES)]
    ratios = []
    for sc, ds, thr in points:
        rows = {t: [c for c in costs if (c.scenario, c.dataset, c.threads, c.target) == (sc, ds, thr, t)]
                for t in targets}
        for t in targets:
            if not rows[t]:
                continue
            cells = []
            for attr, _, fmt in FIGURES:
                iv = st.interval(getattr(c, attr) for c in rows[t])
                cells.append(f"{iv.mean:{fmt}}" + (f" ± {iv.half:{fmt}}" if iv.n > 1 else ""))
            lines.append(f"| {sc} | {ds.split(' ')[0]} | {thr} | {t} | {len(rows[t])} | " + " | ".join(cells) + " |")
        base = rows[targets[0]]
        for t in targets[1:]:
            pairs = [a.mysqld_us_q / b.mysqld_us_q for a, b in zip(rows[t], base) if b.mysqld_us_q]
            iv = st.interval(pairs)
            if iv:
                ratios.append(f"- {sc} {thr} threads: {t} / {targets[0]} mysqld CPU per query "
                              f"{iv.text('.3f')} (per-round ratios, 95% interval)")
    return "\n".join(lines) + "\n" + ("\n" + "\n".join(ratios) + "\n" if ratios else "")


def plot_costs(costs: list[Cost], path: Path) -> Path:
    """Bars of mysqld's CPU per query (mean, 95% interval, rounds as dots) per point and target."""
    plt = rp.pyplot()
    targets = list(dict.fromkeys(c.target for c in costs))
    points = list(dict.fromkeys((c.scenario, c.threads) for c in costs))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(points) * len(targets)), 4.2))
    width = 0.8 / len(targets)
    for i, t in enumerate(targets):
        for j, (sc, thr) in enumerate(points):
            vals = [c.mysqld_us_q for c in costs if (c.scenario, c.threads, c.target) == (sc, thr, t)]
            iv = st.interval(vals)
            if not iv:
                continue
            x = j + i * width
            ax.bar(x, iv.mean, width * 0.9, yerr=iv.half if iv.n > 1 else 0, capsize=4,
                   color=rp.COLORS[i % len(rp.COLORS)], label=t if j == 0 else None)
            ax.scatter([x] * len(vals), vals, s=10, color="black", alpha=0.5, zorder=3)
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(points))])
    ax.set_xticklabels([f"{sc}\n{thr} threads" for sc, thr in points])
    ax.set_ylabel("mysqld CPU per query (µs)")
    ax.set_title("mysqld CPU per query: mean, 95% interval, rounds")
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


class CostKind(Kind):
    name = "cost"
    runner_class = CostRunner
    setup = ["cost: /proc snapshots at sysbench's warm-up checkpoint and at its final report; CPU (utime + "
             "stime) of mysqld and sysbench and mysqld's context switches, divided by the window's queries "
             "(costs.csv)"]

    def sections(self, runner, out_dir):
        write_csv(out_dir / "costs.csv", runner.costs)
        if not runner.costs:
            return ["## Cost per query", "", "(no window measured)"]
        try:
            self.plots.append(plot_costs(runner.costs, out_dir / "plot-cost.png"))
        except rp.PlotUnavailable:
            pass
        return ["## Cost per query", "",
                "Mean over rounds ± 95% half-interval (Student's t) of each window's figures (costs.csv):", "",
                cost_table(runner.costs)]


def main_args(sub, plan_args, run_args) -> None:
    p = sub.add_parser("cost", help="CPU and context switches per query of mysqld and sysbench "
                                    "(replaces cost_per_query.sh, cpu_per_query.sh)",
                       description=__doc__.split("\n\n")[0])
    plan_args(p)
    run_args(p)
