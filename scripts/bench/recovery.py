"""strata-bench recovery: how long a server takes to come back after kill -9 (issue 32).

    scripts/strata-bench recovery --redo-mib 1024 --rounds 3 \\
        --report docs/benchmarks/recovery-DATE.md

For each target (default: the stock twin and the fork with three local log
nodes), one server at a time, targets alternating over rounds (A B, B A, ...):

  1. start it cleanly (the last shutdown's checkpoint is the end of the
     log) and check that the checkpoint age is small;
  2. write --redo-mib MiB of redo with autocommit UPDATEs over a small table
     (recovery.t, loaded once per run), reading `SHOW ENGINE INNODB STATUS`
     after each: the redo since the last checkpoint is "Log sequence number"
     minus "Last checkpoint at", recorded just before the kill;
  3. kill -9 mysqld (the fork's log nodes die with it: PDEATHSIG), start it
     again and time it from the exec of mysqld until it accepts connections
     (its "ready for connections" line and the port answering; polled every
     20 ms). The error log of that start is kept, and InnoDB's own lines
     give the recovery's parts (log_error_verbosity = 3);
  4. stop it cleanly (which flushes the recovered pages: the next round
     starts from a fresh checkpoint).

Holding checkpoints off without debug variables. innodb_checkpoint_disabled
and innodb_log_checkpoint_now exist in debug builds only, and the servers
measured are release builds. A checkpoint cannot pass the oldest dirty
page, so nothing may flush those pages while the redo is written: a buffer
pool that holds them all, innodb_max_dirty_pages_pct = 99 with its low
water mark off (0), innodb_idle_flush_pct = 0, adaptive flushing off with
its low water mark at the maximum (70% of the capacity), the lowest I/O
capacity (100), and a redo capacity of at least 8 times --redo-mib, so that
no flushing for the redo's age starts either. Stock and fork get the same
my.cnf. The page reports the redo since the checkpoint as measured, per
round, so a checkpoint that still happened shows.

Raw output (each timed start's error log, each round's numbers) stays in
the run folder and beside the page. The page gives each figure's mean over
rounds with its 95% interval (stats.py), and the per-round ratio fork /
stock with its interval, against --target-ratio (default 1.5, lower is
better).
"""
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from strata_tools import paths, ports, procs

from . import lock as bench_lock
from . import report as report_mod
from . import stats as st
from .runner import BenchError
from .servers import MysqldServer, check_build, server_version
from .targets import parse_targets

DEFAULT_TARGETS = ["stock", "fork:innodb-log-service-local-nodes=3"]
ROOT = paths.BUILD / "bench" / "recovery"
ROWS = 100_000
PAD = 200  # bytes of CHAR per row: each updated row logs about twice that (redo of the row and of its undo)
ROWS_PER_UPDATE = 25_000
MIB = 1 << 20


def server_options(redo_mib: int) -> dict:
    """The my.cnf both targets get (see the module docstring for why each)."""
    capacity_gib = max(4, -(-redo_mib * 8 // 1024))
    return {
        "innodb_buffer_pool_size": str(2 << 30),
        "innodb_redo_log_capacity": str(capacity_gib << 30),
        "innodb_flush_log_at_trx_commit": "1",
        "innodb_max_dirty_pages_pct": "99",
        "innodb_max_dirty_pages_pct_lwm": "0",
        "innodb_idle_flush_pct": "0",
        "innodb_adaptive_flushing": "OFF",
        "innodb_adaptive_flushing_lwm": "70",
        "innodb_io_capacity": "100",
        "innodb_io_capacity_max": "100",
        "log_error_verbosity": "3",
        "skip-log-bin": None,
    }


# ---- parsing ----------------------------------------------------------------------------------

def parse_lsns(status_text: str) -> tuple[int, int]:
    """(current LSN, last checkpoint LSN) from SHOW ENGINE INNODB STATUS, as `mysql -N -B` prints it
    (newlines escaped as \\n) or as plain text."""
    text = status_text.replace("\\n", "\n")
    lsn = re.search(r"^Log sequence number\s+(\d+)", text, re.M)
    ckpt = re.search(r"^Last checkpoint at\s+(\d+)", text, re.M)
    if not lsn or not ckpt:
        raise ValueError("no 'Log sequence number' / 'Last checkpoint at' in SHOW ENGINE INNODB STATUS")
    return int(lsn.group(1)), int(ckpt.group(1))


_STAMP = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)(Z|[+-]\d\d:\d\d)")


def stamp(line: str) -> float | None:
    """Seconds since the epoch of an error-log line's timestamp; None when the line has none."""
    m = _STAMP.match(line)
    if not m:
        return None
    zone = "+00:00" if m.group(2) == "Z" else m.group(2)
    return datetime.fromisoformat(m.group(1) + zone).timestamp()


# (event, pattern) in the error log of one start; the first match of each counts, except
# `scanned`, where the last one does (recovery reports its progress as it scans).
EVENTS = [
    ("process", re.compile(r"starting as process \d+")),
    ("init_start", re.compile(r"\[InnoDB\] InnoDB initialization has started")),
    ("crash_start", re.compile(r"\[InnoDB\] Starting crash recovery")),
    ("parse_start", re.compile(r"\[InnoDB\] Starting to parse redo log at lsn = (\d+), whereas checkpoint_lsn = (\d+)")),
    ("scanned", re.compile(r"\[InnoDB\] Doing recovery: scanned up to log sequence number (\d+)")),
    ("apply_start", re.compile(r"\[InnoDB\] Applying a batch of \d+ redo log records")),
    ("apply_done", re.compile(r"\[InnoDB\] Apply batch completed")),
    ("init_end", re.compile(r"\[InnoDB\] InnoDB initialization has ended")),
    ("ready", re.compile(r"mysqld: ready for connections")),
]


@dataclass
class StartLog:
    """What the error log of one start says: event times (epoch seconds) and the LSNs recovery read."""
    times: dict = field(default_factory=dict)
    checkpoint_lsn: int | None = None
    scanned_to: int | None = None

    def span(self, a: str, b: str) -> float | None:
        ta, tb = self.times.get(a), self.times.get(b)
        return None if ta is None or tb is None else tb - ta

    @property
    def crashed(self) -> bool:
        return "crash_start" in self.times

    @property
    def redo_scanned(self) -> int | None:
        if self.checkpoint_lsn is None or self.scanned_to is None:
            return None
        return self.scanned_to - self.checkpoint_lsn


def parse_start_log(text: str) -> StartLog:
    """The events of the last start in an error log excerpt (a start begins at 'starting as process')."""
    lines = text.splitlines()
    starts = [i for i, ln in enumerate(lines) if EVENTS[0][1].search(ln)]
    out = StartLog()
    for ln in lines[starts[-1] if starts else 0:]:
        t = stamp(ln)
        for name, pat in EVENTS:
            m = pat.search(ln)
            if not m:
                continue
            if name == "scanned":
                out.scanned_to = int(m.group(1))
                if t is not None:
                    out.times[name] = t
            elif name not in out.times and t is not None:
                out.times[name] = t
                if name == "parse_start":
                    out.checkpoint_lsn = int(m.group(2))
    return out


# ---- one round of one target --------------------------------------------------------------------

@dataclass
class Sample:
    round: int
    target: str
    redo_bytes: int          # LSN - last checkpoint LSN just before the kill
    lsn: int
    checkpoint_lsn: int
    generate_s: float        # writing the redo
    restart_s: float         # exec of mysqld -> accepting connections
    innodb_init_s: float | None
    recovery_s: float | None  # "Starting crash recovery" -> "Apply batch completed"
    scan_s: float | None      # "Starting crash recovery" -> the first "Applying a batch": reading + parsing the redo
    redo_scanned: int | None  # what recovery read: last "scanned up to" - its checkpoint LSN
    crashed: bool             # the start did a crash recovery


class _Dataset:
    """MysqldServer wants a dataset; recovery needs only its slug."""
    slug = "recovery"


def sql(server: MysqldServer, statement: str, timeout: float = 600) -> str:
    return server.instance.sql(statement, timeout=timeout)


def lsns(server: MysqldServer) -> tuple[int, int]:
    return parse_lsns(sql(server, "SHOW ENGINE INNODB STATUS"))


def load(server: MysqldServer, rows: int) -> None:
    sql(server, "CREATE DATABASE IF NOT EXISTS recovery")
    sql(server, "DROP TABLE IF EXISTS recovery.t")
    sql(server, f"CREATE TABLE recovery.t (id INT PRIMARY KEY, k INT NOT NULL, pad CHAR({PAD}) NOT NULL) "
                "ENGINE=InnoDB")
    sql(server, f"SET SESSION cte_max_recursion_depth = {rows + 1}; INSERT INTO recovery.t "
                f"WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < {rows}) "
                f"SELECT n, 0, REPEAT('a', {PAD}) FROM s")


def generate(server: MysqldServer, redo_bytes: int, rows: int) -> tuple[int, int, float]:
    """Autocommit UPDATEs of ROWS_PER_UPDATE rows each until the redo since the checkpoint reaches
    redo_bytes; (LSN, checkpoint LSN, seconds)."""
    t0 = time.monotonic()
    lsn, ckpt = lsns(server)
    n = 0
    while lsn - ckpt < redo_bytes:
        lo = (n * ROWS_PER_UPDATE) % rows
        ch = chr(ord("b") + n % 24)
        sql(server, f"UPDATE recovery.t SET k = k + 1, pad = REPEAT('{ch}', {PAD}) "
                    f"WHERE id > {lo} AND id <= {lo + ROWS_PER_UPDATE}")
        n += 1
        lsn, ckpt = lsns(server)
    return lsn, ckpt, time.monotonic() - t0


def node_pids(server: MysqldServer) -> list[int]:
    out = []
    for f in sorted((server.datadir / "#log_service").glob("n*.pid")):
        pid = procs.read_pid(f)
        if pid:
            out.append(pid)
    return out


def kill9(server: MysqldServer, timeout: float = 30) -> None:
    """SIGKILL mysqld and wait until it and its log nodes are gone."""
    pid = server.instance.pid()
    if pid is None:
        raise BenchError(f"{server.name}: mysqld is not running before the kill")
    nodes = node_pids(server)
    os.kill(pid, signal.SIGKILL)
    try:
        # mysqld is our child (procs.spawn): reap it, or its zombie keeps the pid alive for mysqld's own
        # check of the socket lock file, and the restart refuses ("Another process ... is using unix socket").
        os.waitpid(pid, 0)
    except ChildProcessError:
        pass
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not procs.alive(pid, "mysqld") and not any(procs.alive(p, "logserviced") for p in nodes):
            return
        time.sleep(0.05)
    raise BenchError(f"{server.name}: mysqld {pid} or its log nodes still run {timeout:.0f} s after SIGKILL")


def timed_start(server: MysqldServer, timeout: float) -> tuple[float, str]:
    """Exec mysqld; seconds until it accepts connections, and the error log of this start."""
    inst = server.instance
    offset = inst.error_log.stat().st_size if inst.error_log.exists() else 0

    def log() -> str:
        try:
            with open(inst.error_log, "rb") as f:
                f.seek(offset)
                return f.read().decode(errors="replace")
        except OSError:
            return ""

    t0 = time.monotonic()
    proc = procs.spawn([str(inst.mysqld()), f"--defaults-file={inst.config}"], inst.home / "mysqld.out")
    while time.monotonic() - t0 < timeout:
        if proc.poll() is not None:
            raise BenchError(f"{server.name}: mysqld exited with status {proc.returncode} while recovering; "
                             f"see {inst.error_log}")
        if EVENTS[-1][1].search(log()) and ports.answers(inst.port):
            return time.monotonic() - t0, log()
        time.sleep(0.02)
    proc.kill()
    raise BenchError(f"{server.name}: not accepting connections {timeout:.0f} s after the restart; "
                     f"see {inst.error_log}")


def one_round(server: MysqldServer, rnd: int, redo_bytes: int, rows: int, raw: Path, timeout: float) -> Sample:
    spec = server.target.spec
    server.start()
    lsn, ckpt = lsns(server)
    if lsn - ckpt > 16 * MIB:
        raise BenchError(f"{spec}: {(lsn - ckpt) / MIB:.0f} MiB of redo since the checkpoint right after a clean "
                         "start; expected almost none")
    lsn, ckpt, gen_s = generate(server, redo_bytes, rows)
    kill9(server)
    restart_s, log = timed_start(server, timeout)
    tag = f"r{rnd}-{server.target.slug}"
    (raw / f"{tag}.err.txt").write_text(log)
    sl = parse_start_log(log)
    sample = Sample(rnd, spec, lsn - ckpt, lsn, ckpt, round(gen_s, 2), round(restart_s, 3),
                    sl.span("init_start", "init_end"), sl.span("crash_start", "apply_done"),
                    sl.span("crash_start", "apply_start"), sl.redo_scanned, sl.crashed)
    (raw / f"{tag}.json").write_text(json.dumps(asdict(sample), indent=1))
    server.stop()
    return sample


# ---- the page ---------------------------------------------------------------------------------

def _iv(values) -> st.Interval | None:
    return st.interval(v for v in values if v is not None)


def _text(iv: st.Interval | None, fmt: str = ".2f", unit: str = "") -> str:
    return "—" if iv is None else iv.text(fmt, unit)


def ratios(samples: list[Sample], base: str, other: str, attr: str = "restart_s") -> list[float]:
    """Per round: other's figure / base's figure (rounds where both have one)."""
    by = {(s.round, s.target): getattr(s, attr) for s in samples}
    out = []
    for rnd in sorted({s.round for s in samples}):
        a, b = by.get((rnd, base)), by.get((rnd, other))
        if a and b is not None:
            out.append(b / a)
    return out


def render(meta: dict, samples: list[Sample], targets: list[str], goal: float) -> str:
    when = datetime.fromtimestamp(meta["started"], timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    la, lb = meta["load_before"], meta["load_after"]
    lines = [f"# Recovery after kill -9: stock vs the fork ({when})", "",
             f"Issue 32: restart time after `kill -9` with {meta['redo_mib']} MiB of redo written since the last "
             "checkpoint; target: fork time / stock time ≤ " + f"{goal:g}.", "",
             "Reproduce:", "", "```sh", meta["command"], "```", "",
             "## Machine and load", "",
             f"- `uptime` at the end: `{meta['uptime']}`",
             f"- load average before / after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} / {lb[0]:.2f} {lb[1]:.2f} {lb[2]:.2f}",
             f"- {os.cpu_count()} CPUs; mysqld and the fork's three log nodes on this machine, loopback TCP, one disk",
             *[f"- `{k}`: {v}" for k, v in meta["versions"].items()],
             f"- {meta['rounds']} rounds, targets alternating (A B, B A, ...), one server at a time; "
             f"{meta['elapsed'] / 60:.0f} min in all",
             "- my.cnf of both: " + ", ".join(f"`{k}`" if v is None else f"`{k}={v}`"
                                              for k, v in meta["options"].items()), "",
             "## How it was measured", "",
             "Each round, per target: a clean start; autocommit UPDATEs of a 100,000-row table until "
             "`Log sequence number - Last checkpoint at` (SHOW ENGINE INNODB STATUS) reaches the size; "
             "`kill -9`; the restart timed from exec of mysqld to accepting connections (its `ready for "
             "connections` line and the port answering, polled every 20 ms); a clean stop. "
             "Checkpoints are held off with my.cnf settings (release builds have no "
             "innodb_checkpoint_disabled): see `scripts/bench/recovery.py`. "
             "Mean over rounds ± the 95% interval of the mean (Student's t); the ratio is taken per round.", "",
             "## Results", "",
             "| target | restart to accepting connections | InnoDB initialisation | crash recovery (InnoDB's lines) "
             "| of which reading + parsing the redo | redo since checkpoint at the kill | redo recovery scanned |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for t in targets:
        ss = [s for s in samples if s.target == t]
        if not ss:
            continue
        scanned = _iv(s.redo_scanned / MIB if s.redo_scanned is not None else None for s in ss)
        lines.append(f"| `{t}` | {_text(_iv(s.restart_s for s in ss), '.2f', ' s')} "
                     f"| {_text(_iv(s.innodb_init_s for s in ss), '.2f', ' s')} "
                     f"| {_text(_iv(s.recovery_s for s in ss), '.2f', ' s')} "
                     f"| {_text(_iv(s.scan_s for s in ss), '.2f', ' s')} "
                     f"| {_text(_iv(s.redo_bytes / MIB for s in ss), '.0f', ' MiB')} "
                     f"| {_text(scanned, '.0f', ' MiB')} |")
    lines.append("")
    if len(targets) >= 2:
        for other in targets[1:]:
            iv = _iv(ratios(samples, targets[0], other))
            v = st.verdict(iv, goal, higher_is_better=False)
            lines.append(f"- `{other}` / `{targets[0]}`, restart time: {_text(iv, '.3f')} "
                         f"(per-round ratios, 95% interval); target ≤ {goal:g}: "
                         + (v if v else "no verdict with one round"))
            for attr, what in (("recovery_s", "InnoDB's crash recovery alone"),
                               ("scan_s", "reading + parsing the redo alone")):
                iv = _iv(ratios(samples, targets[0], other, attr))
                if iv:
                    lines.append(f"- `{other}` / `{targets[0]}`, {what}: {_text(iv, '.3f')}")
        lines.append("")
    lines += ["## Rounds", "",
              "| round | target | redo at kill (MiB) | writing it (s) | restart (s) | InnoDB init (s) "
              "| crash recovery (s) | reading + parsing (s) | crash recovery seen |",
              "|---:|---|---:|---:|---:|---:|---:|---:|---|"]
    for s in samples:
        f2 = lambda x: "—" if x is None else f"{x:.2f}"  # noqa: E731
        lines.append(f"| {s.round} | `{s.target}` | {s.redo_bytes / MIB:.0f} | {s.generate_s:.1f} | {s.restart_s:.2f} "
                     f"| {f2(s.innodb_init_s)} | {f2(s.recovery_s)} | {f2(s.scan_s)} | {'yes' if s.crashed else 'NO'} |")
    lines += ["", "## Raw data", "",
              "Each timed start's error log (`r<round>-<target>.err.txt`) and numbers (`.json`): `RAW_DIR/` "
              "next to this page.", ""]
    return "\n".join(lines)


# ---- running ----------------------------------------------------------------------------------

def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except OSError:
        return ""


def run(args, argv: list[str]) -> int:
    if args.redo_mib < 1 or args.rounds < 1:
        raise BenchError("--redo-mib and --rounds must be at least 1")
    specs = args.target or DEFAULT_TARGETS
    targets_ = parse_targets(specs, paths.SERVER_BUILDS)
    for t in targets_:
        check_build(t.flavor)
    lock = bench_lock.hold(lambda m: print(m, flush=True), "strata-bench recovery")  # noqa: F841 (held until exit)
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = Path(args.out) if args.out else paths.BUILD / "bench" / "results" / f"recovery-{date}-{int(time.time())}"
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    port = ports.free_port(args.port)
    options = server_options(args.redo_mib)
    servers = [MysqldServer(t, _Dataset(), Path(args.data_dir) / t.slug, port, options) for t in targets_]
    load_before = os.getloadavg()
    started = time.time()
    for s in servers:
        print(f"{s.target.spec}: loading {args.rows:,} rows", flush=True)
        s.start()
        try:
            load(s, args.rows)
        finally:
            s.stop()
    samples: list[Sample] = []
    for rnd in range(1, args.rounds + 1):
        for s in servers if rnd % 2 == 1 else list(reversed(servers)):
            print(f"round {rnd}: {s.target.spec}: writing {args.redo_mib} MiB of redo, then kill -9", flush=True)
            try:
                sample = one_round(s, rnd, args.redo_mib * MIB, args.rows, raw, args.timeout)
            finally:
                if s.running():
                    s.stop()
            samples.append(sample)
            print(f"round {rnd}: {s.target.spec}: {sample.redo_bytes / MIB:.0f} MiB since the checkpoint, "
                  f"restart {sample.restart_s:.2f} s (InnoDB recovery "
                  f"{'—' if sample.recovery_s is None else f'{sample.recovery_s:.2f} s'})", flush=True)
    meta = {"command": "scripts/strata-bench " + " ".join(argv), "started": started,
            "elapsed": time.time() - started, "load_before": load_before, "load_after": os.getloadavg(),
            "uptime": _uptime(), "redo_mib": args.redo_mib, "rounds": args.rounds, "rows": args.rows,
            "targets": [t.spec for t in targets_], "versions": {t.spec: server_version(t.flavor) for t in targets_},
            "options": options}
    page = render(meta, samples, [t.spec for t in targets_], args.target_ratio)
    report_mod.publish(out, raw, page, {"meta": meta, "samples": [asdict(s) for s in samples]}, args.report, meta["command"])
    return 0


def main_args(sub) -> None:
    p = sub.add_parser("recovery", help="restart time after kill -9 with N MiB of redo since the checkpoint "
                                        "(issue 32), stock vs fork")
    p.add_argument("--target", action="append", help=f"targets (default: {', '.join(DEFAULT_TARGETS)})")
    p.add_argument("--redo-mib", type=int, default=1024, help="redo written after the checkpoint (default 1024)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--rows", type=int, default=ROWS, help=f"rows of the updated table (default {ROWS:,})")
    p.add_argument("--target-ratio", type=float, default=1.5,
                   help="the most fork time / stock time may be (default 1.5)")
    p.add_argument("--timeout", type=float, default=1800, help="seconds a restart may take (default 1800)")
    p.add_argument("--port", type=int, default=13306)
    p.add_argument("--out", help="run folder (default .build/bench/results/recovery-DATE-*)")
    p.add_argument("--report", help="also write the page there, raw data beside it in <name>-raw/")
    p.add_argument("--data-dir", default=str(ROOT), help=f"server homes (default {ROOT})")


if __name__ == "__main__":
    sys.exit("run through scripts/strata-bench recovery")
