"""Results: the CSV of every point, the markdown table, the PNG plots, machine facts.

The CSV (points.csv) is the record: one row per measured point, appended
as soon as the point ends, so an interrupted run keeps what it measured.
Everything else (results.md, the plots, a --report page) is derived from
the CSV plus run.json, and `strata-bench report DIR` rebuilds it.

Figures are copied from sysbench's final report unchanged (QPS and TPS as
printed; p99 as printed; p95 from the printed histogram, see sysbench.py).
A point that ran several rounds shows the mean over its rounds with a 95%
interval (stats.py: Student's t); its ratio is the mean of the per-round
ratios of a target's QPS over the first target's (the baseline), and a
verdict appears only for a --target-ratio and only when the interval clears
it. Plots draw the means, the intervals as error bars and every round.
"""
import csv
import json
import os
import platform
import re
import shutil
import subprocess
from collections import OrderedDict
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from . import stats as st


@dataclass
class PointResult:
    seq: int
    dataset: str          # "full (250x25,000)"...
    tables: int
    rows: int
    scenario: str
    threads: int
    target: str
    status: str           # ok | failed | interrupted
    started: str = ""
    seconds: int = 0
    warmup: int = 0
    tps: float | None = None
    qps: float | None = None
    reads: int | None = None
    writes: int | None = None
    other: int | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    avg_ms: float | None = None
    max_ms: float | None = None
    ignored_errors: int | None = None
    reconnects: int | None = None
    purge_backlog: int | None = None   # InnoDB history list length when the point started
    exit_code: int | None = None
    error: str = ""
    log: str = ""

    @classmethod
    def columns(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    def row(self) -> dict:
        return {k: ("" if v is None else v) for k, v in asdict(self).items()}

    @classmethod
    def from_row(cls, row: dict) -> "PointResult":
        kw = {}
        for f in fields(cls):
            raw = row.get(f.name, "")
            if f.type in ("int", int):
                kw[f.name] = int(raw or 0)
            elif f.type in ("str", str):
                kw[f.name] = raw
            elif "float" in str(f.type):
                kw[f.name] = float(raw) if raw not in ("", None) else None
            elif "int" in str(f.type):
                kw[f.name] = int(float(raw)) if raw not in ("", None) else None
            else:
                kw[f.name] = raw
        return cls(**kw)


class CsvLog:
    """Appends one row per point and flushes it at once."""

    def __init__(self, path: Path):
        self.path = path
        new = not path.exists() or path.stat().st_size == 0
        self._f = open(path, "a", newline="")
        self._w = csv.DictWriter(self._f, fieldnames=PointResult.columns())
        if new:
            self._w.writeheader()
            self._f.flush()

    def add(self, result: PointResult) -> None:
        self._w.writerow(result.row())
        self._f.flush()
        os.fsync(self._f.fileno())

    def close(self) -> None:
        self._f.close()


def read_csv(path: Path) -> list[PointResult]:
    with open(path, newline="") as f:
        return [PointResult.from_row(r) for r in csv.DictReader(f)]


# ---------------------------------------------------------------- the table

def _fmt_qps(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _fmt_ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}"


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


def _key(r: PointResult) -> tuple:
    return (r.dataset, r.scenario, r.threads)


def grouped(results: list[PointResult]) -> tuple[list[str], "OrderedDict[tuple, dict[str, list[PointResult]]]"]:
    """Targets in first-seen order; points in first-seen order, each with its rows per target."""
    targets: list[str] = []
    groups: OrderedDict = OrderedDict()
    for r in sorted(results, key=lambda r: r.seq):
        if r.target not in targets:
            targets.append(r.target)
        groups.setdefault(_key(r), {}).setdefault(r.target, []).append(r)
    return targets, groups


@dataclass
class PointStats:
    """One point (dataset, scenario, threads) over its rounds: the mean and 95% interval of each
    target's QPS, TPS, p95 and p99, and of each target's per-round ratio to the baseline."""
    qps: dict            # target -> Interval | None
    tps: dict
    p95: dict
    p99: dict
    ratio: dict          # non-baseline target -> Interval | None (per-round QPS ratios)
    runs: dict           # target -> [PointResult] in round order
    ok: dict             # target -> [PointResult] that succeeded

    def failed(self, t: str) -> list[PointResult]:
        return [r for r in self.runs.get(t, []) if r.status != "ok"]


def _is_ok(r: PointResult | None) -> bool:
    return r is not None and r.status == "ok" and r.qps is not None


def round_pairs(per_target: dict, base: str, t: str) -> list[float]:
    """QPS ratios t / base within each round (the i-th run of each): only rounds both measured."""
    a, b = per_target.get(t, []), per_target.get(base, [])
    return [x.qps / y.qps for x, y in zip(a, b) if _is_ok(x) and _is_ok(y) and y.qps]


def point_stats(per_target: dict, targets: list[str]) -> PointStats:
    ok = {t: [r for r in per_target.get(t, []) if _is_ok(r)] for t in targets}
    base = targets[0]
    return PointStats(
        qps={t: st.interval(r.qps for r in ok[t]) for t in targets},
        tps={t: st.interval(r.tps for r in ok[t]) for t in targets},
        p95={t: st.interval(r.p95_ms for r in ok[t]) for t in targets},
        p99={t: st.interval(r.p99_ms for r in ok[t]) for t in targets},
        ratio={t: st.interval(round_pairs(per_target, base, t)) for t in targets[1:]},
        runs={t: list(per_target.get(t, [])) for t in targets}, ok=ok)


def summary(rows: list[PointResult]) -> PointResult | None:
    """The last successful run of a point on one target (for its error counts), else its last run."""
    ok = [r for r in rows if _is_ok(r)]
    return ok[-1] if ok else (rows[-1] if rows else None)


def _iv(iv, fmt) -> str:
    if iv is None:
        return "-"
    if iv.n < 2:
        return fmt(iv.mean)
    return f"{fmt(iv.mean)} ± {fmt(iv.half)}"


def _ratio_text(iv, digits: int = 3) -> str:
    if iv is None:
        return "-"
    return f"{iv.mean:.{digits}f}x" + (f" ± {iv.half:.{digits}f}" if iv.n >= 2 else "")


def _verdict_text(iv, target) -> str:
    v = st.verdict(iv, target.ratio)
    if v is None:
        return f"no interval (≥ {target.ratio:g}: one round)"
    if v == st.OPEN:
        return f"open (interval holds {target.ratio:g})"
    return f"{v} (≥ {target.ratio:g})"


def verdicts(results: list[PointResult], targets_: list) -> list[tuple[str, str, int, str, object, str]]:
    """(scenario, dataset, threads, target, ratio interval, verdict text) for every point a
    --target-ratio applies to, per non-baseline target."""
    targets, groups = grouped(results)
    out = []
    for (ds, sc, thr), per_target in groups.items():
        goal = st.target_for(targets_, sc, thr)
        if goal is None:
            continue
        ps = point_stats(per_target, targets)
        for t in targets[1:]:
            out.append((sc, ds, thr, t, ps.ratio[t], _verdict_text(ps.ratio[t], goal)))
    return out


def _cell(ps: PointStats, t: str, which: str, fmt) -> str:
    iv = getattr(ps, which)[t]
    if iv is not None:
        return _iv(iv, fmt)
    runs = ps.runs.get(t) or []
    return runs[-1].status if runs else "-"


def _rounds_note(ps: PointStats, t: str) -> str:
    n_ok, n = len(ps.ok[t]), len(ps.runs.get(t, []))
    return "" if n_ok == n else f"{t}: {n - n_ok} of {n} rounds failed"


def markdown_table(results: list[PointResult], targets_: list | None = None) -> str:
    """One row per point: mean ± 95% half-interval over rounds (Student's t) of every figure;
    ratios are the mean of the per-round ratios; a verdict column with --target-ratio."""
    targets, groups = grouped(results)
    if not targets:
        return "(no points measured)\n"
    base = targets[0]
    head = ["scenario", "dataset", "threads", "rounds"]
    head += [f"{t} QPS" for t in targets]
    head += [f"{t} / {base}" for t in targets[1:]]
    if targets_:
        head += ["verdict"]
    head += [f"{t} TPS" for t in targets]
    head += [f"{t} p95 ms" for t in targets]
    head += [f"{t} p99 ms" for t in targets]
    head += ["errors"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---"] * 3 + ["---:"] * (len(head) - 4) + ["---"]) + "|"]
    for (ds, sc, thr), per_target in groups.items():
        ps = point_stats(per_target, targets)
        row = [sc, ds, str(thr), str(max(len(v) for v in ps.runs.values()))]
        row += [_cell(ps, t, "qps", _fmt_qps) for t in targets]
        row += [_ratio_text(ps.ratio[t]) for t in targets[1:]]
        if targets_:
            goal = st.target_for(targets_, sc, thr)
            row.append("; ".join((f"{t}: " if len(targets) > 2 else "") + _verdict_text(ps.ratio[t], goal)
                                 for t in targets[1:]) if goal else "-")
        row += [_cell(ps, t, "tps", _fmt_qps) for t in targets]
        row += [_cell(ps, t, "p95", _fmt_ms) for t in targets]
        row += [_cell(ps, t, "p99", _fmt_ms) for t in targets]
        errs = []
        for t in targets:
            ign = sum(r.ignored_errors or 0 for r in ps.ok[t])
            rec = sum(r.reconnects or 0 for r in ps.ok[t])
            if ign or rec:
                errs.append(f"{t}: {ign} ignored, {rec} reconnects")
        failed = [_rounds_note(ps, t) for t in targets if _rounds_note(ps, t)]
        failed += sorted({f"{t}: {r.error}" for t in targets for r in ps.failed(t) if r.error})
        row.append("; ".join(errs + failed) or "0")
        lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def rounds_table(results: list[PointResult]) -> str:
    """With several rounds per point: every round's QPS per target and the
    ratio within that round, the samples behind the intervals. Empty when
    every point ran once."""
    targets, groups = grouped(results)
    if not any(len(rows) > 1 for per_target in groups.values() for rows in per_target.values()):
        return ""
    base = targets[0]
    head = ["scenario", "dataset", "threads", "round"] + [f"{t} QPS" for t in targets] \
        + [f"{t} / {base}" for t in targets[1:]]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join(["---"] * 4 + ["---:"] * (len(head) - 4)) + "|"]
    for (ds, sc, thr), per_target in groups.items():
        n = max(len(rows) for rows in per_target.values())
        for i in range(n):
            runs = {t: (per_target.get(t) or [])[i] if i < len(per_target.get(t) or []) else None for t in targets}
            qps = {t: r.qps if _is_ok(r) else None for t, r in runs.items()}
            row = [sc, ds, str(thr), str(i + 1)]
            row += [_fmt_qps(qps[t]) if qps[t] is not None else (runs[t].status if runs[t] else "-") for t in targets]
            for t in targets[1:]:
                q = _ratio(qps[t], qps[base])
                row.append("-" if q is None else f"{q:.3f}x")
            lines.append("| " + " | ".join(_md_escape(c) for c in row) + " |")
    return "\n".join(lines) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def text_table(results: list[PointResult], targets_: list | None = None) -> str:
    """A compact table for the terminal: QPS, ratio (mean ± 95% half-interval over rounds), p95."""
    targets, groups = grouped(results)
    if not targets:
        return "(no points measured)"
    base = targets[0]
    head = ["scenario", "dataset", "thr", "n"] + [f"{t} qps" for t in targets] \
        + [f"/{base}" for _ in targets[1:]] + (["verdict"] if targets_ else []) \
        + [f"{t} p95" for t in targets] + ["errors"]
    body = []
    for (ds, sc, thr), per_target in groups.items():
        ps = point_stats(per_target, targets)
        row = [sc, ds.split(" ")[0], str(thr), str(max(len(v) for v in ps.runs.values()))]
        row += [_cell(ps, t, "qps", _fmt_qps) for t in targets]
        row += [_ratio_text(ps.ratio[t], 2) for t in targets[1:]]
        if targets_:
            goal = st.target_for(targets_, sc, thr)
            row.append("; ".join(_verdict_text(ps.ratio[t], goal) for t in targets[1:]) if goal else "-")
        row += [_cell(ps, t, "p95", _fmt_ms) for t in targets]
        row.append(str(sum((r.ignored_errors or 0) + (r.reconnects or 0) for t in targets for r in ps.ok[t])))
        body.append(row)
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    out = ["  ".join(h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(head, widths)))]
    for r in body:
        out.append("  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))))
    return "\n".join(out)


# ---------------------------------------------------------------- plots

def plot(results: list[PointResult], out_dir: Path, prefix: str = "") -> list[Path]:
    """One PNG per dataset. Scenarios with several concurrencies: QPS and p95 vs
    threads (log2 axis), one line per target through the means, the 95% interval
    as an error bar and every round as a dot. A dataset whose scenarios each have
    a single concurrency (the whitepaper): grouped bars of the means per scenario,
    with the interval and the rounds, instead."""
    plt = pyplot()
    targets, groups = grouped(results)
    by_ds: OrderedDict = OrderedDict()
    for (ds, sc, thr), per_target in groups.items():
        by_ds.setdefault(ds, OrderedDict()).setdefault(sc, []).append((thr, per_target))
    written = []
    for ds, scenarios in by_ds.items():
        single = all(len(v) == 1 for v in scenarios.values())
        if single:
            fig = _bars(plt, ds, scenarios, targets, COLORS)
        else:
            fig = _lines(plt, ds, scenarios, targets, COLORS)
        slug = re.sub(r"[^a-z0-9]+", "-", ds.lower()).strip("-")
        path = out_dir / f"{prefix}plot-{slug}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        written.append(path)
    return written


COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b"]


class PlotUnavailable(RuntimeError):
    pass


def pyplot():
    """matplotlib.pyplot on the Agg backend, or PlotUnavailable."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise PlotUnavailable(f"matplotlib is missing ({e}); apt-get install python3-matplotlib") from None
    return plt


def _err(iv) -> float:
    return iv.half if iv is not None and iv.n >= 2 else 0.0


def _lines(plt, ds, scenarios, targets, colors):
    n = len(scenarios)
    fig, axes = plt.subplots(n, 2, figsize=(11, 3.3 * n + 1.0), squeeze=False)
    fig.suptitle(f"sysbench, dataset {ds}: mean and 95% interval over rounds, dots = rounds", fontsize=12)
    for row, (sc, points) in enumerate(scenarios.items()):
        points = sorted(points, key=lambda p: p[0])
        threads = [p[0] for p in points]
        tops = [0.0, 0.0]
        for i, t in enumerate(targets):
            color = colors[i % len(colors)]
            for col, (which, attr) in enumerate((("qps", "qps"), ("p95", "p95_ms"))):
                xs, ys, es = [], [], []
                for thr, per_target in points:
                    ps = point_stats(per_target, targets)
                    iv = getattr(ps, which)[t]
                    if iv is None:
                        continue
                    xs.append(thr)
                    ys.append(iv.mean)
                    es.append(_err(iv))
                    rounds = [getattr(r, attr) for r in ps.ok[t] if getattr(r, attr) is not None]
                    axes[row][col].scatter([thr] * len(rounds), rounds, s=10, color=color, alpha=0.45)
                    tops[col] = max([tops[col], iv.high] + rounds)
                axes[row][col].errorbar(xs, ys, yerr=es, color=color, marker="o", linewidth=2, capsize=4,
                                        label=t)
        for col, (title, ylabel) in enumerate([(f"{sc}: throughput", "queries per second"),
                                               (f"{sc}: 95th percentile latency", "p95 latency (ms)")]):
            ax = axes[row][col]
            ax.set_title(title, fontsize=11)
            ax.set_xlabel("concurrency (sysbench threads)")
            ax.set_ylabel(ylabel)
            if len(threads) > 1 and max(threads) / max(1, min(threads)) >= 8:
                ax.set_xscale("log", base=2)
            ax.set_xticks(threads)
            ax.set_xticklabels([str(t) for t in threads])
            ax.set_ylim(0, (tops[col] or 1) * 1.12)
            ax.grid(True, alpha=0.3)
            if col == 0:
                ax.yaxis.set_major_formatter(_thousands())
    # One legend for the figure, under the title, so it never hides a point.
    handles, labels = axes[0][0].get_legend_handles_labels()
    top = 1 - 0.9 / fig.get_figheight()
    fig.legend(handles, labels, loc="upper center", ncol=len(targets), fontsize=10,
               bbox_to_anchor=(0.5, top + 0.02 / fig.get_figheight() * 10), frameon=False)
    fig.tight_layout(rect=(0, 0, 1, top - 0.01))
    return fig


def _bars(plt, ds, scenarios, targets, colors):
    """Small multiples: a column per scenario (each with its own scale), QPS on top, p95 below;
    bars are means, whiskers the 95% interval, dots the rounds; the label gives the ratio interval."""
    names = list(scenarios)
    n = len(names)
    fig, axes = plt.subplots(2, n, figsize=(max(6.0, 2.5 * n), 6.6), squeeze=False)
    fig.suptitle(f"sysbench, dataset {ds}: mean, 95% interval, rounds", fontsize=12)
    for col, sc in enumerate(names):
        thr, per_target = scenarios[sc][0]
        ps = point_stats(per_target, targets)
        for row, (which, attr, ylabel) in enumerate([("qps", "qps", "queries per second"),
                                                     ("p95", "p95_ms", "p95 latency (ms)")]):
            ax = axes[row][col]
            ivs = [getattr(ps, which)[t] for t in targets]
            vals = [iv.mean if iv else 0 for iv in ivs]
            bars = ax.bar(range(len(targets)), vals, 0.7, yerr=[_err(iv) for iv in ivs], capsize=4,
                          color=[colors[i % len(colors)] for i in range(len(targets))], alpha=0.85)
            top = 0.0
            for i, t in enumerate(targets):
                rounds = [getattr(r, attr) for r in ps.ok[t] if getattr(r, attr) is not None]
                ax.scatter([i] * len(rounds), rounds, s=10, color="black", alpha=0.5, zorder=3)
                top = max([top, ivs[i].high if ivs[i] else 0] + rounds)
            ax.set_ylim(0, (top or 1) * 1.3)
            for i, (b, v) in enumerate(zip(bars, vals)):
                text = _fmt_qps(v) if which == "qps" else f"{v:.1f}" if v >= 10 else f"{v:.2f}"
                if i > 0 and which == "qps" and ps.ratio[targets[i]] is not None:
                    text += "\n" + _ratio_text(ps.ratio[targets[i]], 2)
                ax.annotate(text, (b.get_x() + b.get_width() / 2, top * 1.02), ha="center", va="bottom", fontsize=7)
            ax.set_xticks([])
            ax.grid(True, axis="y", alpha=0.3)
            if which == "qps":
                ax.set_title(f"{sc}\n{thr} threads", fontsize=10)
                ax.yaxis.set_major_formatter(_thousands())
            if col == 0:
                ax.set_ylabel(ylabel)
    handles = [plt.Rectangle((0, 0), 1, 1, color=colors[i % len(colors)]) for i in range(len(targets))]
    fig.legend(handles, targets, loc="lower center", ncol=len(targets), fontsize=9)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    return fig


def _thousands():
    from matplotlib.ticker import FuncFormatter
    return FuncFormatter(lambda v, _: f"{v / 1000:g}k" if v >= 1000 else f"{v:g}")


# ---------------------------------------------------------------- machine facts

def machine_facts(read=lambda p: Path(p).read_text(), run=None) -> dict[str, str]:
    """CPU, memory, kernel and disk of this machine, from /proc and standard tools."""
    run = run or _run
    facts: dict[str, str] = {}
    try:
        cpuinfo = read("/proc/cpuinfo")
        models = re.findall(r"^model name\s*:\s*(.+)$", cpuinfo, re.M)
        facts["cpu"] = f"{len(models)} x {models[0].strip()}" if models else "unknown"
    except OSError:
        facts["cpu"] = "unknown"
    mem = re.search(r"^Mem:\s+(\d+)", run(["free", "-b"]), re.M)
    facts["memory"] = f"{int(mem.group(1)) / (1 << 30):.1f} GiB" if mem else "unknown"
    facts["kernel"] = run(["uname", "-srvm"]).strip() or platform.platform()
    os_release = ""
    try:
        os_release = dict(re.findall(r'^(\w+)="?([^"\n]*)"?$', read("/etc/os-release"), re.M)).get("PRETTY_NAME", "")
    except OSError:
        pass
    facts["os"] = os_release or "unknown"
    facts["sysbench"] = (run(["sysbench", "--version"]).strip() or "unknown")
    return facts


def _run(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.TimeoutExpired):
        return ""


# ---------------------------------------------------------------- the page

def results_markdown(results: list[PointResult], meta: dict, plots: list[Path], page_dir: Path) -> str:
    """results.md / a --report page: command, machine, settings, datasets, table, plots."""
    lines = [f"# {meta.get('title', 'sysbench results')}", ""]
    if meta.get("date"):
        lines += [f"Run on {meta['date']}" + (f"; {meta['duration']} wall time." if meta.get("duration") else "."), ""]
    if meta.get("command"):
        lines += ["Command:", "", "```sh", meta["command"], "```", ""]
    machine = [f"- {k}: {v}" for k, v in meta.get("machine", {}).items()]
    machine += [f"- server `{t}`: {v}" for t, v in meta.get("servers", {}).items()]
    if meta.get("git"):
        machine.append(f"- source: {meta['git']}")
    if machine:
        lines += ["## Machine", ""] + machine + [""]
    setup = [f"- {line}" for line in meta.get("setup", [])]
    if meta.get("server_options"):
        setup += ["- server settings of every target (my.cnf, besides paths and the port):", "", "```ini"]
        setup += [k if v is None else f"{k} = {v}" for k, v in meta["server_options"].items()]
        setup += ["```"]
    for t, ov in meta.get("overrides", {}).items():
        if ov:
            setup.append(f"- `{t}` also sets: " + ", ".join(f"`{k}={v}`" if v is not None else f"`{k}`"
                                                            for k, v in ov))
    if setup:
        lines += ["## Setup", ""] + setup
    if meta.get("datasets"):
        lines += ["", "## Datasets", ""]
        lines += [f"- {d}" for d in meta["datasets"]]
    if meta.get("scenarios"):
        lines += ["", "## Scenarios", "", "| scenario | sysbench | what |", "|---|---|---|"]
        for name, (cmd, what) in meta["scenarios"].items():
            lines.append(f"| {name} | `{cmd}` | {what} |")
    goals = st.parse_targets(meta.get("target_ratios") or [])
    lines += ["", "## Results", "",
              "Every figure is the mean over the rounds with its 95% interval (± half-width, Student's t "
              "over the rounds; no ± with one round). QPS and TPS as sysbench printed them for the measured "
              "interval (after the warm-up); p99 as printed (`--percentile=99`), p95 from the latency "
              "histogram of the same run. Ratios: the mean of the per-round QPS ratios over the first target "
              f"(`{meta.get('baseline') or (grouped(results)[0] or ['?'])[0]}`), each measured within one round. "
              "errors: sysbench's ignored errors and reconnects."
              + (" Verdict: met when the whole interval is at or above the target ratio, not met when it is "
                 "wholly below, open when it holds the target (more rounds needed)." if goals else ""), ""]
    lines.append(markdown_table(results, goals))
    if goals:
        found = verdicts(results, goals)
        lines += ["### Targets", ""]
        lines += [f"- {sc} at {thr} threads ({ds.split(' ')[0]}), {t}: {_ratio_text(iv)} — {text}"
                  for sc, ds, thr, t, iv, text in found] or ["- no measured point matches "
                                                             + ", ".join(g.text() for g in goals)]
        lines.append("")
    per_round = rounds_table(results)
    if per_round:
        lines += ["### Every round", "",
                  "The samples behind the intervals above: each round's QPS per target and the ratio "
                  "measured within that round (the targets ran back to back):", "", per_round]
    if meta.get("sections"):
        lines += list(meta["sections"]) + [""]
    for p in plots:
        rel = os.path.relpath(p, page_dir)
        lines += [f"![{p.stem}]({rel})", ""]
    notes = meta.get("notes", [])
    if notes:
        lines += ["## Notes", ""] + [f"- {n}" for n in notes] + [""]
    if meta.get("raw"):
        lines += [f"Raw sysbench output of every point: `{meta['raw']}`.", ""]
    return "\n".join(lines)


def write_page(results: list[PointResult], meta: dict, out_dir: Path, page: Path | None) -> tuple[Path, list[Path], str | None]:
    """results.md and plots in out_dir; with `page`, also a copy of both next to it."""
    warning = None
    try:
        plots = plot(results, out_dir) + [out_dir / name for name in meta.get("extra_plots") or []
                                          if (out_dir / name).exists()]
    except PlotUnavailable as e:
        plots, warning = [], str(e)
    md = out_dir / "results.md"
    md.write_text(results_markdown(results, meta, plots, out_dir))
    if page:
        page.parent.mkdir(parents=True, exist_ok=True)
        copies = []
        for p in plots:
            dest = page.parent / f"{page.stem}-{p.name}"
            shutil.copyfile(p, dest)
            copies.append(dest)
        page.write_text(results_markdown(results, meta, copies, page.parent))
    return md, plots, warning


def save_meta(path: Path, meta: dict) -> None:
    path.write_text(json.dumps(meta, indent=2, default=str) + "\n")


def load_meta(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def publish(out: Path, raw: Path, page: str, results: dict, report: str | None, command: str) -> None:
    """What a subcommand that renders its own page leaves behind: results.json
    and results.md in the run folder (the page's RAW_DIR naming raw/), and
    with --report the page there, its raw output beside it in <name>-raw/;
    then where they are and the command that reproduces them."""
    (out / "results.json").write_text(json.dumps(results, indent=1))
    (out / "results.md").write_text(page.replace("RAW_DIR", "raw"))
    if report:
        dest = Path(report)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(page.replace("RAW_DIR", dest.stem + "-raw"))
        dst = dest.parent / (dest.stem + "-raw")
        dst.mkdir(parents=True, exist_ok=True)
        for f in raw.iterdir():
            (dst / f.name).write_text(f.read_text())
        (dst / "results.json").write_text((out / "results.json").read_text())
    print(f"\nresults: {out / 'results.md'}" + (f"\npage:    {report}" if report else ""))
    print("reproduce: " + command)
