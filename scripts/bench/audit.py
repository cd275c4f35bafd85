"""strata-bench audit: what the audit plugin costs, policy against policy on one running server.

    scripts/strata-bench audit --scenario read-point --threads 16 --rounds 10 --target-ratio '*=0.97'
    scripts/strata-bench audit --cycles --scenario rw-point --threads 64 --rounds 3
    scripts/strata-bench audit --target fork:plugin-load-add=strata_audit.so,plugin_dir=/tmp/old \\
                               --target fork:plugin-load-add=strata_audit.so,plugin_dir=/tmp/new

Each target (default: the fork with strata_audit.so loaded) is a `run`
target: one server at a time, targets alternating point by point. For every
point the runner sets `audit_log_policy` to each of --policies in turn
(SET GLOBAL, no restart, so the server's drift between starts stays out)
and runs one sysbench window per policy, the order flipping every round
(NONE ALL, ALL NONE, ...). Results are labelled "TARGET POLICY"; the page
gives each policy's QPS (mean and 95% interval over rounds) and, per
target, the per-round ratio of each policy to the first (ALL / NONE), with a
verdict for --target-ratio. Two builds of the plugin compare as two targets
that differ in plugin_dir (replaces audit_build_ab.sh: same mysqld, only the
plugin changes).

--cycles also records `perf record -a -g` over each measured window (from
sysbench's warm-up checkpoint to its final report) and
counts the share of all CPU samples that the audit code took (replaces
audit_cycles.py): with the CPUs saturated, every cycle the audit code takes
is a cycle the queries do not get, and a profile resolves a 2% cost in one
window where QPS needs dozens.

  session  a sample whose call chain passes through strata_audit.so or the
           server's audit dispatch (mysql_audit_acquire_plugins,
           event_class_dispatch, audit_notify)
  writer   every sample of the plugin's writer thread (AuditLog::writer_main;
           its write() calls leave libc without frame pointers)

perf data and `perf script` output stay in raw/; shares go to cycles.csv.
"""
import collections
import csv
import dataclasses
import os
import signal
import subprocess
from pathlib import Path

from . import stats as st
from .cost import WindowWatch
from .kind import Kind
from .plan import Step
from .runner import BenchError, Runner, kill_group

DEFAULT_TARGET = "fork:plugin-load-add=strata_audit.so"
POLICIES = ("NONE", "ALL")
DISPATCH_SYMBOLS = ("mysql_audit_acquire_plugins", "event_class_dispatch", "audit_notify")
WRITER_SYMBOL = "AuditLog::writer_main"


# ---------------------------------------------------------------- perf samples

def parse_perf_script(text):
    """Yields (comm, tid, frames) per sample of `perf script -F comm,tid,ip,sym,dso`."""
    comm = tid = None
    frames = []
    for line in text.splitlines():
        if not line.strip():
            if comm is not None:
                yield comm, tid, frames
            comm, frames = None, []
        elif not line[0].isspace():
            # "COMM TID"; a comm may hold spaces, the tid is last.
            head = line.split()
            comm, tid = " ".join(head[:-1]), int(head[-1].split("/")[-1])
        else:
            frames.append(line.strip())
    if comm is not None:
        yield comm, tid, frames


def is_audit_frame(frame):
    return "strata_audit.so" in frame or any(s in frame for s in DISPATCH_SYMBOLS)


def classify(samples):
    """Counts total, idle (swapper), writer (the writer thread's samples) and
    session (other samples through audit code)."""
    samples = list(samples)
    writer_tids = {tid for _, tid, frames in samples if any(WRITER_SYMBOL in f for f in frames)}
    counts = collections.Counter()
    for comm, tid, frames in samples:
        counts["total"] += 1
        if comm == "swapper":
            counts["idle"] += 1
        elif tid in writer_tids:
            counts["writer"] += 1
        elif any(is_audit_frame(f) for f in frames):
            counts["session"] += 1
    return counts


def shares(counts) -> dict:
    total = max(counts["total"], 1)
    busy = max(counts["total"] - counts["idle"], 1)
    audit = counts["session"] + counts["writer"]
    return {"samples": counts["total"], "idle_pct": 100.0 * counts["idle"] / total,
            "session_pct": 100.0 * counts["session"] / total, "writer_pct": 100.0 * counts["writer"] / total,
            "audit_pct": 100.0 * audit / total, "audit_of_busy_pct": 100.0 * audit / busy}


CYCLE_COLUMNS = ["seq", "scenario", "threads", "target", "policy", "samples", "idle_pct", "session_pct",
                 "writer_pct", "audit_pct", "audit_of_busy_pct", "perf_data"]


# ---------------------------------------------------------------- the runner

def policy_order(step_index: int, policies: tuple[str, ...]) -> list[str]:
    """Policies of one point, the order flipping every point (NONE ALL, ALL NONE, ...)."""
    return list(policies) if step_index % 2 == 0 else list(reversed(policies))


class AuditRunner(Runner):
    policies: tuple[str, ...] = POLICIES
    cycles = False

    def __init__(self, *a, **kw):
        super().__init__(*a, **kw)
        self.cycle_rows: list[dict] = []
        self._perf = None
        self._watch = None
        self._perf_data: Path | None = None
        self._csv = None

    @property
    def windows_per_step(self) -> int:
        return len(self.policies)

    def run(self, csv, on_result=None):
        self._csv = csv
        return super().run(csv, on_result)

    def on_point_line(self, step, srv, line):
        if not self.cycles:
            return
        if self._watch is None:
            self._watch = WindowWatch(lambda: self._perf_toggle(step))
        self._watch.line(line, 0.0)

    def _perf_toggle(self, step) -> bool:
        """At the warm-up checkpoint: start perf; when the final report starts: stop it (SIGINT, perf then
        writes its file). perf takes a moment to start, so its profile lies inside the measured window."""
        if self._perf is None:
            self._perf_data = self.raw_dir / f"perf-{step.index + 1:03d}.data"
            self._perf = subprocess.Popen(["perf", "record", "-a", "-g", "-F", "499", "-o", str(self._perf_data),
                                           "--", "sleep", str(self.plan.seconds + 600)],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                          start_new_session=True)
            self.started.procs.append(self._perf)
        elif self._perf.poll() is None:
            os.killpg(self._perf.pid, signal.SIGINT)
        return True

    def _perf_done(self, step: Step, policy: str) -> None:
        proc, self._perf, self._watch = self._perf, None, None
        if proc is None:
            return
        if proc.poll() is None:   # the window ended without a final report (a failed sysbench)
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            kill_group(proc)
        self.started.procs.remove(proc)
        text = subprocess.run(["perf", "script", "-i", str(self._perf_data), "-F", "comm,tid,ip,sym,dso"],
                              capture_output=True, text=True).stdout
        (self._perf_data.with_suffix(".script.txt")).write_text(text)
        row = {"seq": step.index + 1, "scenario": step.point.scenario.name, "threads": step.point.threads,
               "target": step.target.spec, "policy": policy, "perf_data": str(self._perf_data)}
        row.update({k: round(v, 3) for k, v in shares(classify(parse_perf_script(text))).items()})
        self.cycle_rows.append(row)
        self.progress.say(f"  cycles: audit {row['audit_pct']:.2f}% of all samples "
                          f"(session {row['session_pct']:.2f}%, writer {row['writer_pct']:.2f}%, "
                          f"idle {row['idle_pct']:.1f}%)")

    def run_point(self, step, srv):
        order = policy_order(step.index, self.policies)
        n = len(order)
        last = None
        for k, policy in enumerate(order):
            try:
                srv.sql(f"SET GLOBAL audit_log_policy = {policy}")
            except Exception as e:
                raise BenchError(f"{step.target.spec}: cannot set audit_log_policy (is strata_audit.so loaded? "
                                 f"the default target is {DEFAULT_TARGET}): {e}") from None
            label = dataclasses.replace(step.target, spec=f"{step.target.spec} {policy}")
            sub = Step(step.index * n + k, step.point, label)
            result = super().run_point(sub, srv)
            self._perf_done(sub, policy)
            if k + 1 < n:
                self.results.append(result)
                self._csv.add(result)
            last = result
        return last


def ratio_table(results, policies: tuple[str, ...], goals) -> str:
    """Per point and target: each policy's per-round QPS ratio to the first policy (mean ± 95%)."""
    by = collections.OrderedDict()
    for r in sorted(results, key=lambda r: r.seq):
        spec, _, policy = r.target.rpartition(" ")
        by.setdefault((r.scenario, r.threads, spec), {}).setdefault(policy, []).append(r)
    base = policies[0]
    lines = ["| scenario | threads | target | " + " | ".join(f"{p} / {base}" for p in policies[1:])
             + (" | verdict" if goals else "") + " |", "|---|---|---|" + "---:|" * (len(policies) - 1)
             + ("---|" if goals else "")]
    for (sc, thr, spec), per in by.items():
        cells, verdicts = [], []
        for p in policies[1:]:
            pairs = [a.qps / b.qps for a, b in zip(per.get(p, []), per.get(base, []))
                     if a.status == "ok" and b.status == "ok" and a.qps and b.qps]
            iv = st.interval(pairs)
            cells.append(iv.text(".3f") if iv else "-")
            goal = st.target_for(goals, sc, thr) if goals else None
            if goal:
                v = st.verdict(iv, goal.ratio)
                verdicts.append({None: "no interval", st.OPEN: f"open (holds {goal.ratio:g})"}.get(
                    v, f"{v} (≥ {goal.ratio:g})"))
        lines.append(f"| {sc} | {thr} | {spec} | " + " | ".join(cells)
                     + (" | " + "; ".join(verdicts or ["-"]) if goals else "") + " |")
    return "\n".join(lines) + "\n"


def cycles_table(rows: list[dict]) -> str:
    by = collections.OrderedDict()
    for r in rows:
        by.setdefault((r["scenario"], r["threads"], r["target"], r["policy"]), []).append(r)
    lines = ["| scenario | threads | target | policy | windows | audit % of samples | session % | writer % "
             "| idle % |", "|---|---|---|---|---:|---:|---:|---:|---:|"]
    for (sc, thr, t, p), rs in by.items():
        cell = [st.interval(float(r[k]) for r in rs) for k in ("audit_pct", "session_pct", "writer_pct", "idle_pct")]
        lines.append(f"| {sc} | {thr} | {t} | {p} | {len(rs)} | "
                     + " | ".join(iv.text(".2f").rsplit(" (", 1)[0] for iv in cell) + " |")
    return "\n".join(lines) + "\n"


class AuditKind(Kind):
    name = "audit"
    runner_class = AuditRunner

    def __init__(self, policies: tuple[str, ...], cycles: bool, goals):
        super().__init__()
        self.policies, self.cycles, self.goals = policies, cycles, goals
        AuditRunner.policies, AuditRunner.cycles = policies, cycles
        self.setup = [f"audit: audit_log_policy set at runtime to {', '.join(policies)} in turn on each "
                      "running server, one sysbench window each, the order flipping every point"
                      + ("; perf record -a -g -F 499 over each measured window (cycles.csv, raw/perf-*)"
                         if cycles else "")]

    def sections(self, runner, out_dir):
        out = ["## Audit cost", "", f"Per-round QPS ratio of each policy to {self.policies[0]} on the same "
               "server (mean ± 95% half-interval, Student's t over rounds):", "",
               ratio_table(runner.results, self.policies, self.goals)]
        if self.cycles:
            with open(out_dir / "cycles.csv", "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=CYCLE_COLUMNS)
                w.writeheader()
                w.writerows(runner.cycle_rows)
            out += ["## Audit cycles", "", "Share of all CPU samples (`perf record -a -g`) in audit code, "
                    "mean ± 95% half-interval over windows (cycles.csv):", "", cycles_table(runner.cycle_rows)]
        return out


def main_args(sub, plan_args, run_args) -> None:
    p = sub.add_parser("audit", help="audit plugin cost: policies switched at runtime, optional perf cycle "
                                     "shares (replaces audit_policy_switch.sh, audit_build_ab.sh, audit_cycles.py)",
                       description=__doc__.split("\n\n")[0])
    plan_args(p)
    run_args(p)
    p.add_argument("--policies", default=",".join(POLICIES),
                   help="audit_log_policy values, the first the baseline (default NONE,ALL)")
    p.add_argument("--cycles", action="store_true",
                   help="also count the audit code's share of CPU samples with perf (scripts/setup --bench)")


def parse_policies(text: str) -> tuple[str, ...]:
    policies = tuple(p.strip().upper() for p in text.split(",") if p.strip())
    bad = [p for p in policies if p not in ("ALL", "LOGINS", "QUERIES", "NONE")]
    if bad or len(policies) < 2 or len(set(policies)) != len(policies):
        raise BenchError(f"--policies {text!r}: two or more of ALL, LOGINS, QUERIES, NONE, each once")
    return policies
