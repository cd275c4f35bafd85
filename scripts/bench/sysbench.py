"""sysbench 1.0.20: the command line of one measured point, and its report.

How a point is measured (one sysbench process per point):

    sysbench SCRIPT run --threads=N --time=W+T --report-checkpoints=W
             --percentile=99 --histogram=on --report-interval=1 ...

- The first W seconds are the warm-up: threads connect, prepare their
  statements and bring the buffer pool to its steady state. At W sysbench
  prints a "Checkpoint report" and resets every counter (1.0.20 has no
  --warmup-time; checkpoints are how it resets statistics mid-run).
- The final report covers only the T measured seconds: transactions and
  queries with their per-second rates, ignored errors, reconnects, and the
  99th percentile (--percentile=99, printed by sysbench itself).
- p95 comes from the latency histogram sysbench prints for the same T
  seconds (--histogram=on). sysbench computes every percentile from that
  same logarithmic histogram (1024 buckets, 0.001 ms to 100 s), so we redo
  its arithmetic on the printed buckets: the result is the figure sysbench
  would have printed with --percentile=95. The parser checks itself by
  recomputing p99 the same way and comparing with sysbench's own line.
- Errors: "ignored errors" and "reconnects" of the final report, plus a
  failed run (non-zero exit, a FATAL line, or no final report).

Only the standard library here, so the tests run anywhere in seconds.
"""
import math
import re
from dataclasses import dataclass, field

# sysbench's latency histogram: sb_latency_histogram in sysbench.c.
HIST_BUCKETS = 1024
HIST_MIN_MS = 0.001
HIST_MAX_MS = 100_000.0
_DEDUCT = math.log(HIST_MIN_MS)
_MULT = (HIST_BUCKETS - 1) / (math.log(HIST_MAX_MS) - _DEDUCT)

MEASURED_PERCENTILE = 99  # what we ask sysbench to print; p95 is derived


def bucket_value(index: int) -> float:
    """Upper value (ms) sysbench reports for histogram bucket `index`."""
    return math.exp(index / _MULT + _DEDUCT)


def bucket_index(value_ms: float, after: int = -1) -> int:
    """The first bucket after `after` that sysbench prints as `value_ms` ("%12.3f").

    Below ~0.06 ms neighbouring buckets print the same 3 decimals; taking the
    first matching one after the previous row keeps every row on its own bucket.
    Falls back to the nearest bucket if nothing prints exactly so.
    """
    text = f"{value_ms:.3f}"
    guess = 0 if value_ms <= HIST_MIN_MS else round((math.log(value_ms) - _DEDUCT) * _MULT)
    lo = max(after + 1, guess - 3)
    for i in range(lo, min(HIST_BUCKETS, max(lo, guess + 4))):
        if f"{bucket_value(i):.3f}" == text:
            return i
    nearest = min(range(max(0, guess - 3), min(HIST_BUCKETS, guess + 4)),
                  key=lambda i: abs(bucket_value(i) - value_ms))
    return max(nearest, after + 1)


def percentile(histogram: list[tuple[float, int]], pct: float) -> float | None:
    """sysbench's percentile over a printed histogram [(value_ms, count)].

    Same rule as sb_histogram_get_pct_*: the first bucket at which the
    running count reaches round(total * pct / 100); its value is the answer.
    """
    total = sum(count for _, count in histogram)
    if total == 0:
        return None
    need = math.floor(total * pct / 100 + 0.5)
    if need == 0:
        return 0.0
    running = 0
    last = -1
    for value, count in histogram:
        last = bucket_index(value, last)
        running += count
        if running >= need:
            return bucket_value(last)
    return bucket_value(last)


@dataclass
class Report:
    """The final report of one sysbench run (after the warm-up checkpoint)."""
    transactions: int = 0
    tps: float = 0.0
    queries: int = 0
    qps: float = 0.0
    reads: int = 0
    writes: int = 0
    other: int = 0
    ignored_errors: int = 0
    reconnects: int = 0
    seconds: float = 0.0           # total time as printed (includes the warm-up)
    events: int = 0
    lat_min_ms: float = 0.0
    lat_avg_ms: float = 0.0
    lat_max_ms: float = 0.0
    lat_pct_ms: float | None = None  # the --percentile line sysbench printed
    lat_pct: int | None = None       # which percentile that line is
    p95_ms: float | None = None
    p99_ms: float | None = None
    histogram: list[tuple[float, int]] = field(default_factory=list)
    checkpoints: int = 0             # checkpoint reports seen before the final one
    fatal: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


class ParseError(ValueError):
    pass


_NUM = r"([0-9]+(?:\.[0-9]+)?)"
_FIELDS = {
    "read": re.compile(r"^\s*read:\s+(\d+)\s*$"),
    "write": re.compile(r"^\s*write:\s+(\d+)\s*$"),
    "other": re.compile(r"^\s*other:\s+(\d+)\s*$"),
    "transactions": re.compile(rf"^\s*transactions:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)"),
    "queries": re.compile(rf"^\s*queries:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)"),
    "ignored": re.compile(rf"^\s*ignored errors:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)"),
    "reconnects": re.compile(rf"^\s*reconnects:\s+(\d+)\s+\(\s*{_NUM} per sec\.\)"),
    "time": re.compile(rf"^\s*total time:\s+{_NUM}s"),
    "events": re.compile(r"^\s*total number of events:\s+(\d+)"),
    "min": re.compile(rf"^\s*min:\s+{_NUM}\s*$"),
    "avg": re.compile(rf"^\s*avg:\s+{_NUM}\s*$"),
    "max": re.compile(rf"^\s*max:\s+{_NUM}\s*$"),
    "pct": re.compile(rf"^\s*(\d+)th percentile:\s+{_NUM}\s*$"),
}
_HIST_ROW = re.compile(rf"^\s*{_NUM}\s+\|[* ]*\s(\d+)\s*$")
_CHECKPOINT = re.compile(r"^\[\s*\d+s\s*\] Checkpoint report:")
_FATAL = re.compile(r"^(FATAL|ALERT): (.*)$")


def parse_report(text: str) -> Report:
    """Parse sysbench's stdout; the last report block wins (checkpoints come first).

    Raises ParseError if there is no final report at all.
    """
    rep = Report()
    in_hist = False
    seen_final = False
    for raw in text.splitlines():
        line = raw.rstrip()
        m = _FATAL.match(line.strip())
        if m:
            rep.fatal.append(line.strip())
            continue
        if _CHECKPOINT.match(line):
            rep.checkpoints += 1
            continue
        if line.startswith("Latency histogram"):
            in_hist, rep.histogram = True, []
            continue
        if in_hist:
            m = _HIST_ROW.match(line)
            if m:
                rep.histogram.append((float(m.group(1)), int(m.group(2))))
                continue
            if "distribution" in line:
                continue
            if not line.strip():
                in_hist = False
                continue
            in_hist = False
        for key, rx in _FIELDS.items():
            m = rx.match(line)
            if not m:
                continue
            g = m.groups()
            if key == "read":
                rep.reads = int(g[0])
            elif key == "write":
                rep.writes = int(g[0])
            elif key == "other":
                rep.other = int(g[0])
            elif key == "transactions":
                rep.transactions, rep.tps = int(g[0]), float(g[1])
                seen_final = True
            elif key == "queries":
                rep.queries, rep.qps = int(g[0]), float(g[1])
            elif key == "ignored":
                rep.ignored_errors = int(g[0])
            elif key == "reconnects":
                rep.reconnects = int(g[0])
            elif key == "time":
                rep.seconds = float(g[0])
            elif key == "events":
                rep.events = int(g[0])
            elif key == "min":
                rep.lat_min_ms = float(g[0])
            elif key == "avg":
                rep.lat_avg_ms = float(g[0])
            elif key == "max":
                rep.lat_max_ms = float(g[0])
            elif key == "pct":
                rep.lat_pct, rep.lat_pct_ms = int(g[0]), float(g[1])
            break
    if not seen_final:
        raise ParseError("sysbench printed no final report"
                         + (f" ({rep.fatal[-1]})" if rep.fatal else ""))
    _fill_percentiles(rep)
    return rep


def _fill_percentiles(rep: Report) -> None:
    if rep.lat_pct == 95:
        rep.p95_ms = rep.lat_pct_ms
    if rep.lat_pct == 99:
        rep.p99_ms = rep.lat_pct_ms
    if not rep.histogram:
        if rep.p95_ms is None or rep.p99_ms is None:
            rep.warnings.append("no latency histogram: one of p95/p99 is missing")
        return
    derived = {p: percentile(rep.histogram, p) for p in (95, 99)}
    if rep.lat_pct in derived and rep.lat_pct_ms is not None and derived[rep.lat_pct] is not None:
        # Our arithmetic must agree with sysbench's own line (it prints 2 decimals).
        if abs(round(derived[rep.lat_pct], 2) - rep.lat_pct_ms) > 0.011 + 1e-9:
            rep.warnings.append(
                f"p{rep.lat_pct} from the histogram is {derived[rep.lat_pct]:.3f} ms but sysbench "
                f"printed {rep.lat_pct_ms:.2f} ms")
    if rep.p95_ms is None and derived[95] is not None:
        rep.p95_ms = float(f"{derived[95]:.2f}")  # as sysbench prints it (%4.2f)
    if rep.p99_ms is None and derived[99] is not None:
        rep.p99_ms = float(f"{derived[99]:.2f}")
    hist_events = sum(c for _, c in rep.histogram)
    # Events finishing right at the checkpoint can land on either side: allow 1%.
    if rep.events and abs(hist_events - rep.events) > max(2, rep.events // 100):
        rep.warnings.append(f"histogram holds {hist_events} events, the report {rep.events}")


def histogram_of(text: str) -> list[tuple[float, int]]:
    """The last latency histogram in sysbench's output, as [(value_ms, count)]."""
    rows: list[tuple[float, int]] = []
    inside = False
    for line in text.splitlines():
        if line.startswith("Latency histogram"):
            inside, rows = True, []
        elif inside:
            m = _HIST_ROW.match(line)
            if m:
                rows.append((float(m.group(1)), int(m.group(2))))
            elif "distribution" not in line:
                inside = False
    return rows


# One interval line: "[ 10s ] thds: 64 tps: 1219.87 qps: 24412.43 (r/w/o: ...)
#                     lat (ms,99%): 78.60 err/s: 0.00 reconn/s: 0.00"
_INTERVAL = re.compile(
    rf"^\[\s*(\d+)s\s*\]\s+thds:\s+(\d+)\s+tps:\s+{_NUM}\s+qps:\s+{_NUM}.*?"
    rf"lat \(ms,(\d+)%\):\s+{_NUM}\s+err/s:\s+{_NUM}\s+reconn/s:\s+{_NUM}")


@dataclass
class Interval:
    second: int
    threads: int
    tps: float
    qps: float
    lat_ms: float
    err_per_s: float
    reconn_per_s: float


def parse_interval(line: str) -> Interval | None:
    m = _INTERVAL.match(line.strip())
    if not m:
        return None
    g = m.groups()
    return Interval(int(g[0]), int(g[1]), float(g[2]), float(g[3]), float(g[5]), float(g[6]), float(g[7]))


def fatal_summary(text: str) -> str | None:
    """The most telling error line of a failed sysbench run, or None."""
    lines = [line.strip() for line in text.splitlines()]
    fatal = [line for line in lines if _FATAL.match(line)]
    # sysbench prints the driver's error ("FATAL: mysql_stmt_prepare() failed") and then the
    # server's message ("FATAL: MySQL error: 1461 ..."); the server's line says more.
    for line in reversed(fatal):
        if "error:" in line.lower() and "mysql" in line.lower():
            return line
    if fatal:
        return fatal[-1]
    errors = [line for line in lines if line.lower().startswith("error") or "unknown option" in line.lower()]
    return errors[-1] if errors else None


@dataclass(frozen=True)
class Connection:
    host: str
    port: int
    user: str = "root"
    db: str = "sbtest"


def base_args(script: str, conn: Connection, tables: int, rows: int) -> list[str]:
    return [script,
            "--db-driver=mysql", f"--mysql-host={conn.host}", f"--mysql-port={conn.port}",
            f"--mysql-user={conn.user}", "--mysql-password=", f"--mysql-db={conn.db}",
            f"--tables={tables}", f"--table_size={rows}"]


def run_args(script: str, options: dict[str, str], conn: Connection, tables: int, rows: int,
             threads: int, warmup: int, seconds: int, extra: list[str] = ()) -> list[str]:
    """Arguments (after the sysbench binary) of one measured point."""
    args = base_args(script, conn, tables, rows)
    args += [f"--{k}={v}" for k, v in options.items()]
    args += [f"--threads={threads}", f"--time={warmup + seconds}", "--report-interval=1",
             f"--percentile={MEASURED_PERCENTILE}", "--histogram=on"]
    if warmup > 0:
        args.append(f"--report-checkpoints={warmup}")
    args += list(extra)
    args.append("run")
    return args


def prepare_args(conn: Connection, tables: int, rows: int, threads: int) -> list[str]:
    return base_args("oltp_read_write", conn, tables, rows) + [f"--threads={threads}", "prepare"]


def prewarm_args(conn: Connection, tables: int, rows: int, threads: int) -> list[str]:
    return base_args("oltp_read_write", conn, tables, rows) + [f"--threads={threads}", "prewarm"]


def version(text: str) -> str | None:
    m = re.search(r"sysbench (\d+\.\d+\.\d+)", text)
    return m.group(1) if m else None
