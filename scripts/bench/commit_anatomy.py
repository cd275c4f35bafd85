"""strata-bench anatomy: one commit's latency broken into its parts (issue 32).

    scripts/strata-bench anatomy --threads 1,16,64 --rounds 3 --time 20 \\
        --report docs/benchmarks/commit-anatomy-DATE.md

For each target (default: the stock twin and the fork with three local log
nodes) and each thread count, sysbench runs an autocommit single-row INSERT
loop (lua/anatomy_insert.lua: one event = one commit). Targets alternate
over rounds (A B, B A, ...), one server at a time. Around the measured
window (after the warm-up, while sysbench runs) the script snapshots what the
code keeps anyway, and subtracts:

  - SHOW GLOBAL STATUS: the fork's Innodb_log_service_* stage clocks
    (docs/reference/variables.md, "Commit anatomy"); stock's Innodb_log_writes,
    Innodb_os_log_fsyncs, Innodb_os_log_written; Com_insert (= commits);
  - performance_schema: the INSERT statements' server-side latency
    (events_statements_summary_global_by_event_name) and the redo files'
    write and sync waits (file_summary_by_event_name, innodb_log_file);
  - each log node's stage clocks (`logservicectl status --nodes ... --json`);
  - /proc/<pid>/task/*/{stat,schedstat,status} of mysqld and each node:
    CPU time, time spent runnable but waiting for a CPU, context switches.

After each point a local write+fdatasync loop of the same bytes per group
runs in the target's folder (the disk the redo uses), for comparison.
Raw snapshots and sysbench output stay in the run folder (and next to the
report); the page gives each stage's mean over rounds with a 95% interval.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from strata_tools import paths, ports

from . import lock as bench_lock
from . import stats as st
from .runner import BenchError
from .scenarios import LUA_DIR
from .servers import MysqldServer, check_build, server_version
from .targets import parse_targets

DEFAULT_TARGETS = ["stock", "fork:innodb-log-service-local-nodes=3"]
ROOT = paths.BUILD / "bench" / "anatomy"
LUA = LUA_DIR / "anatomy_insert.lua"
BUCKETS = 20  # LatencyHistogram::kBuckets

SERVER_OPTIONS = {
    "innodb_buffer_pool_size": str(1 << 30),
    "innodb_redo_log_capacity": str(2 << 30),
    "innodb_flush_log_at_trx_commit": "1",
    "innodb_flush_method": "O_DIRECT",
    "skip-log-bin": None,
    "max_connections": "256",
    "performance_schema": "ON",
}

NODE_COUNTERS = ["appends", "fdatasyncs", "tail_writes", "append_queue_ns", "append_write_ns", "sync_queue_ns",
                 "sync_batches", "sync_ns", "sync_acks", "append_ack_ns", "append_total_ns", "tail_requests",
                 "tail_queue_ns", "tail_save_ns", "tail_total_ns"]


# ---- snapshots ---------------------------------------------------------------------------------

def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def proc_threads(pid: int) -> dict:
    """Per live thread: name, CPU ticks, run-queue delay (ns), context switches; plus process CPU."""
    out = {"threads": {}, "cpu_ticks": 0}
    stat = _read(Path(f"/proc/{pid}/stat"))
    if stat:
        fields = stat[stat.rindex(")") + 2:].split()
        out["cpu_ticks"] = int(fields[11]) + int(fields[12])  # utime + stime, dead threads included
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        base = Path(f"/proc/{pid}/task/{tid}")
        st, sched, status = _read(base / "stat"), _read(base / "schedstat"), _read(base / "status")
        if not st:
            continue
        name = st[st.index("(") + 1:st.rindex(")")]
        fields = st[st.rindex(")") + 2:].split()
        csw = sum(int(m) for m in re.findall(r"(?:non)?voluntary_ctxt_switches:\s+(\d+)", status))
        sch = sched.split()
        out["threads"][tid] = {"name": name, "cpu_ticks": int(fields[11]) + int(fields[12]),
                               "run_delay_ns": int(sch[1]) if len(sch) > 1 else 0, "csw": csw}
    return out


class Target:
    def __init__(self, target, port: int, root: Path):
        self.target = target
        self.home = root / target.slug
        self.server = MysqldServer(target, _Dataset(), self.home, port, SERVER_OPTIONS)
        self.build = check_build(target.flavor)
        self.version = server_version(target.flavor)

    @property
    def remote(self) -> bool:
        return any(k.replace("_", "-") == "innodb-log-service-local-nodes" for k, _ in self.target.overrides)

    def log_dir(self) -> Path:
        return self.server.datadir / "#log_service"

    def node_pids(self) -> list[int]:
        pids = []
        for f in sorted(self.log_dir().glob("n*.pid")):
            try:
                pids.append(int(f.read_text().split()[0]))
            except (OSError, ValueError, IndexError):
                pass
        return pids

    def node_counters(self) -> list[dict]:
        d = self.log_dir()
        ports_ = [_read(f).strip() for f in sorted(d.glob("n*.port"))]
        cluster = re.search(r"cluster_id=(\S+)", _read(d / "cluster"))
        if not ports_ or not cluster:
            raise BenchError(f"{self.target.spec}: no local log nodes found in {d}")
        ctl = paths.binary(self.build, "logservicectl")
        nodes = ",".join(f"tcp://127.0.0.1:{p}" for p in ports_)
        out = subprocess.run([str(ctl), "status", f"--nodes={nodes}", f"--cluster_id={cluster.group(1)}",
                              f"--secret_file={d / 'secret'}", "--json"], capture_output=True, text=True, timeout=30)
        rows = [json.loads(line) for line in out.stdout.splitlines() if line.startswith("{")]
        if len(rows) != len(ports_) or any("error" in r for r in rows):
            raise BenchError(f"{self.target.spec}: logservicectl status: {out.stdout.strip()} {out.stderr.strip()}")
        return [{k: int(r[k]) for k in NODE_COUNTERS} for r in rows]

    def snapshot(self) -> dict:
        s = self.server
        status = {}
        for line in s.sql("SHOW GLOBAL STATUS").splitlines():
            k, _, v = line.partition("\t")
            status[k] = v
        insert = s.sql("SELECT COUNT_STAR, SUM_TIMER_WAIT FROM performance_schema."
                       "events_statements_summary_global_by_event_name WHERE EVENT_NAME = 'statement/sql/insert'").split()
        redo = s.sql("SELECT COUNT_WRITE, SUM_TIMER_WRITE, SUM_NUMBER_OF_BYTES_WRITE, COUNT_MISC, SUM_TIMER_MISC "
                     "FROM performance_schema.file_summary_by_event_name "
                     "WHERE EVENT_NAME = 'wait/io/file/innodb/innodb_log_file'").split()
        snap = {"t": time.monotonic(), "status": status,
                "pfs_insert": [int(x) for x in insert] or [0, 0],
                "pfs_redo": [int(x) for x in redo] or [0, 0, 0, 0, 0],
                "mysqld": proc_threads(s.instance.pid() or 0), "nodes": [], "node_procs": []}
        if self.remote:
            snap["nodes"] = self.node_counters()
            snap["node_procs"] = [proc_threads(p) for p in self.node_pids()]
        return snap


class _Dataset:
    """MysqldServer wants a dataset; the anatomy needs only its slug."""
    slug = "anatomy"


def fdatasync_loop(folder: Path, size: int, seconds: float = 2.0, limit: int = 400) -> dict:
    """write(2) of `size` bytes (rounded up to 4 KiB, appended) + fdatasync, as a redo group would."""
    size = max(4096, (size + 4095) // 4096 * 4096)
    path = folder / "fdatasync-loop.tmp"
    buf = os.urandom(size)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    times = []
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end and len(times) < limit:
            t0 = time.perf_counter_ns()
            os.write(fd, buf)
            os.fdatasync(fd)
            times.append(time.perf_counter_ns() - t0)
    finally:
        os.close(fd)
        path.unlink(missing_ok=True)
    times.sort()
    return {"bytes": size, "n": len(times), "mean_ns": statistics.mean(times),
            "p50_ns": times[len(times) // 2], "p99_ns": times[min(len(times) - 1, int(len(times) * 0.99))]}


# ---- deltas -> stages --------------------------------------------------------------------------

def _num(status: dict, name: str) -> float:
    try:
        return float(status.get(name, 0) or 0)
    except ValueError:
        return 0.0


def _hist(status: dict, name: str) -> list[int]:
    v = status.get(name, "")
    parts = [int(x) for x in v.split(",")] if v else []
    return parts + [0] * (BUCKETS - len(parts))


def hist_quantile(counts: list[int], q: float) -> float | None:
    """As quantile_us in redo.cc: linear inside the power-of-two bucket; microseconds."""
    total = sum(counts)
    if total <= 0:
        return None
    rank, seen = q * total, 0
    for b, c in enumerate(counts):
        if c <= 0:
            continue
        if seen + c >= rank:
            lo, hi = (0 if b == 0 else 2 ** b), 2 ** (b + 1)
            return lo + (hi - lo) * (rank - seen) / c
        seen += c
    return float(2 ** len(counts))


def _thread_deltas(a: dict, b: dict) -> dict:
    """Sum over threads alive in both snapshots, grouped by thread name."""
    groups: dict = {}
    for tid, tb in b["threads"].items():
        ta = a["threads"].get(tid)
        if ta is None:
            continue
        g = groups.setdefault(tb["name"], {"cpu_ticks": 0, "run_delay_ns": 0, "csw": 0, "threads": 0})
        for k in ("cpu_ticks", "run_delay_ns", "csw"):
            g[k] += tb[k] - ta[k]
        g["threads"] += 1
    return groups


def stages(a: dict, b: dict, remote: bool) -> dict:
    """One point's stages: {name: value}; times in microseconds per event, counts per commit."""
    sa, sb = a["status"], b["status"]
    d = lambda name: _num(sb, name) - _num(sa, name)  # noqa: E731
    per = lambda x, n: x / n if n > 0 else None  # noqa: E731
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    commits = d("Com_insert")
    out = {"seconds": b["t"] - a["t"], "commits": commits, "tps": per(commits, b["t"] - a["t"])}
    ins = [y - x for x, y in zip(a["pfs_insert"], b["pfs_insert"])]
    out["stmt_us"] = per(ins[1] / 1e6, ins[0])  # picoseconds -> us
    mth = _thread_deltas(a["mysqld"], b["mysqld"])
    out["mysqld_cpu_us"] = per((b["mysqld"]["cpu_ticks"] - a["mysqld"]["cpu_ticks"]) * tick_us, commits)
    out["mysqld_csw"] = per(sum(g["csw"] for g in mth.values()), commits)
    out["mysqld_runq_us"] = per(sum(g["run_delay_ns"] for g in mth.values()) / 1e3, commits)
    out["threads"] = {n: {"cpu_us": per(g["cpu_ticks"] * tick_us, commits), "csw": per(g["csw"], commits),
                          "runq_us": per(g["run_delay_ns"] / 1e3, commits), "threads": g["threads"]}
                      for n, g in mth.items()}
    if not remote:
        redo = [y - x for x, y in zip(a["pfs_redo"], b["pfs_redo"])]
        out["redo_writes"] = per(d("Innodb_log_writes"), commits)
        out["redo_fsyncs"] = per(d("Innodb_os_log_fsyncs"), commits)
        out["redo_write_us"] = per(redo[1] / 1e6, redo[0])
        out["redo_sync_us"] = per(redo[4] / 1e6, redo[3])
        out["bytes_per_group"] = per(d("Innodb_os_log_written"), d("Innodb_os_log_fsyncs"))
        return out
    p = "Innodb_log_service_"
    c = lambda name: d(p + name)  # noqa: E731
    out["commit_wait_us"] = per(c("commit_wait_ns") / 1e3, c("commit_waits"))
    out["commit_waited"] = per(c("commit_waits"), commits)
    out["commit_wakeups"] = per(c("commit_wait_loops"), c("commit_waits"))
    out["commit_csw"] = per(c("commit_wait_csw"), c("commit_waits"))
    hist = [y - x for x, y in zip(_hist(sa, p + "commit_wait_hist"), _hist(sb, p + "commit_wait_hist"))]
    out["commit_wait_p50_us"], out["commit_wait_p99_us"] = hist_quantile(hist, 0.5), hist_quantile(hist, 0.99)
    out["handoff_us"] = per(c("handoff_ns") / 1e3, c("handoffs"))
    out["handoffs"] = per(c("handoffs"), commits)
    out["bytes_per_group"] = per(c("shipped_bytes"), c("handoffs"))
    out["post_us"] = per(c("client_post_ns") / 1e3, c("client_posts"))
    out["window_wait_us"] = per(c("client_window_wait_ns") / 1e3, c("client_appends"))
    out["first_ack_us"] = per(c("client_first_ack_ns") / 1e3, c("client_first_acks"))
    out["second_ack_us"] = per(c("client_second_ack_ns") / 1e3, c("client_second_acks"))
    out["durable_us"] = per(c("client_durable_ns") / 1e3, c("client_durable_groups"))
    hist = [y - x for x, y in zip(_hist(sa, p + "client_durable_hist"), _hist(sb, p + "client_durable_hist"))]
    out["durable_p50_us"], out["durable_p99_us"] = hist_quantile(hist, 0.5), hist_quantile(hist, 0.99)
    out["groups"] = per(c("client_durable_groups"), commits)
    out["flusher_wait_us"] = per(c("durable_wait_ns") / 1e3, c("durable_waits"))
    out["flusher_waits"] = per(c("durable_waits"), commits)
    out["client_wake_us"] = per(c("client_wake_ns") / 1e3, c("client_waits"))
    out["client_wakeups"] = per(c("client_wait_wakeups"), c("client_waits"))
    # The nodes: sums over the three, per request.
    nd = {k: sum(nb[k] - na[k] for na, nb in zip(a["nodes"], b["nodes"])) for k in NODE_COUNTERS}
    out["node_append_queue_us"] = per(nd["append_queue_ns"] / 1e3, nd["appends"])
    out["node_append_write_us"] = per(nd["append_write_ns"] / 1e3, nd["appends"])
    out["node_sync_queue_us"] = per(nd["sync_queue_ns"] / 1e3, nd["sync_acks"])
    out["node_fdatasync_us"] = per(nd["sync_ns"] / 1e3, nd["sync_batches"])
    out["node_appends_per_sync"] = per(nd["sync_acks"], nd["sync_batches"])
    out["node_ack_us"] = per(nd["append_ack_ns"] / 1e3, nd["sync_acks"])
    out["node_append_total_us"] = per(nd["append_total_ns"] / 1e3, nd["sync_acks"])
    out["node_tail_queue_us"] = per(nd["tail_queue_ns"] / 1e3, nd["tail_requests"])
    out["node_tail_save_us"] = per(nd["tail_save_ns"] / 1e3, nd["tail_requests"])
    out["node_tail_total_us"] = per(nd["tail_total_ns"] / 1e3, nd["tail_requests"])
    # Requests a node handles per commit: appends (one may carry the tail
    # register) plus tails sent on their own.
    out["node_requests_per_commit"] = per((nd["appends"] + nd["tail_requests"]) / max(1, len(b["nodes"])), commits)
    out["node_tails_per_commit"] = per(nd["tail_requests"] / max(1, len(b["nodes"])), commits)
    out["node_syncs_per_commit"] = per(nd["fdatasyncs"] / max(1, len(b["nodes"])), commits)
    cpu = csw = runq = 0.0
    for pa, pb in zip(a["node_procs"], b["node_procs"]):
        cpu += (pb["cpu_ticks"] - pa["cpu_ticks"]) * tick_us
        g = _thread_deltas(pa, pb)
        csw += sum(x["csw"] for x in g.values())
        runq += sum(x["run_delay_ns"] for x in g.values()) / 1e3
    out["nodes_cpu_us"], out["nodes_csw"], out["nodes_runq_us"] = per(cpu, commits), per(csw, commits), per(runq, commits)
    return out


# ---- running -----------------------------------------------------------------------------------

def run_point(t: Target, threads: int, warmup: int, seconds: int, raw: Path, tag: str, sysbench: str) -> dict:
    conn = [f"--mysql-host={ports.LOOPBACK}", f"--mysql-port={t.server.port}", "--mysql-user=root",
            "--mysql-password=", "--mysql-db=anatomy", "--db-driver=mysql"]
    argv = [sysbench, str(LUA), *conn, f"--threads={threads}", f"--time={warmup + seconds + 3}",
            "--report-interval=5", "--percentile=99", "run"]
    out_path = raw / f"{tag}.sysbench.txt"
    with open(out_path, "w") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        try:
            time.sleep(warmup)
            if proc.poll() is not None:
                raise BenchError(f"sysbench ended early; see {out_path}")
            a = t.snapshot()
            time.sleep(seconds)
            b = t.snapshot()
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                proc.kill()
    st = stages(a, b, t.remote)
    st["fdatasync_loop"] = fdatasync_loop(t.home, int(st.get("bytes_per_group") or 4096))
    (raw / f"{tag}.json").write_text(json.dumps({"before": a, "after": b, "stages": st}, indent=1))
    return st


def prepare(t: Target) -> None:
    t.server.start()
    t.server.sql("CREATE DATABASE IF NOT EXISTS anatomy")
    t.server.sql("CREATE TABLE IF NOT EXISTS anatomy.t (id BIGINT PRIMARY KEY AUTO_INCREMENT, k INT NOT NULL, "
                 "pad CHAR(100) NOT NULL) ENGINE=InnoDB")
    t.server.sql("TRUNCATE TABLE anatomy.t")


def run(args, argv: list[str]) -> int:
    specs = args.target or DEFAULT_TARGETS
    targets_ = parse_targets(specs, paths.SERVER_BUILDS)
    lock = bench_lock.hold(lambda m: print(m, flush=True), "strata-bench anatomy")  # noqa: F841 (held until exit)
    threads = [int(x) for part in (args.threads or ["1,16,64"]) for x in part.split(",") if x.strip()]
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = Path(args.out) if args.out else paths.BUILD / "bench" / "results" / f"anatomy-{date}-{int(time.time())}"
    raw = out / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    port = ports.free_port(args.port)
    ts = [Target(t, port, Path(args.data_dir)) for t in targets_]
    load_before = os.getloadavg()
    started = time.time()
    results: dict = {}  # (spec, threads) -> [stages per round]
    for rnd in range(1, args.rounds + 1):
        order = ts if rnd % 2 == 1 else list(reversed(ts))
        for t in order:
            print(f"round {rnd}: {t.target.spec}: starting", flush=True)
            prepare(t)
            try:
                for n in threads:
                    tag = f"r{rnd}-{t.target.slug}-t{n}"
                    st = run_point(t, n, args.warmup, args.time, raw, tag, args.sysbench)
                    results.setdefault(f"{t.target.spec}|{n}", []).append(st)
                    print(f"round {rnd}: {t.target.spec} {n} threads: {st['tps'] or 0:,.0f} commits/s, "
                          f"INSERT {st['stmt_us'] or 0:,.0f} us", flush=True)
            finally:
                t.server.stop()
    meta = {"command": "scripts/strata-bench " + " ".join(argv), "started": started, "elapsed": time.time() - started,
            "load_before": load_before, "load_after": os.getloadavg(), "threads": threads,
            "targets": [t.target.spec for t in ts], "versions": {t.target.spec: t.version for t in ts},
            "rounds": args.rounds, "time": args.time, "warmup": args.warmup, "uptime": _uptime()}
    (out / "results.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    page = render(meta, results, ts)
    (out / "results.md").write_text(page)
    if args.report:
        report = Path(args.report)
        report.parent.mkdir(parents=True, exist_ok=True)  # a run's report can go anywhere
        report.write_text(page.replace("RAW_DIR", report.stem + "-raw"))
        dst = report.parent / (report.stem + "-raw")
        dst.mkdir(parents=True, exist_ok=True)
        for f in raw.iterdir():
            if f.suffix == ".txt":
                (dst / f.name).write_text(f.read_text())
        (dst / "stages.json").write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    print(f"\nresults: {out / 'results.md'}" + (f"\npage:    {args.report}" if args.report else ""))
    print("reproduce: " + meta["command"])
    return 0


def _uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True, timeout=5).stdout.strip()
    except OSError:
        return ""


# ---- the page ----------------------------------------------------------------------------------

def fmt(values: list, unit: str = "us") -> str:
    """A stage's values over rounds as mean ± the half-width of its 95% interval (stats.py, as on
    every strata-bench page); one round: the mean alone; none: a dash."""
    iv = st.interval(values)
    if iv is None:
        return "—"
    m, ci = iv.mean, (iv.half if iv.n >= 2 else None)
    if unit == "us":
        text = f"{m / 1000:,.2f} ms" if abs(m) >= 1000 else f"{m:,.0f} us"
        if ci is not None:
            text += f" ± {ci / 1000:,.2f}" if abs(m) >= 1000 else f" ± {ci:,.0f}"
        return text
    if unit == "x":
        return f"{m:,.2f}" + (f" ± {ci:,.2f}" if ci is not None else "")
    if unit == "B":
        return f"{m:,.0f} B"
    return f"{m:,.0f}" + (f" ± {ci:,.0f}" if ci is not None else "")


FORK_ROWS = [
    ("commit: INSERT statement, server side (P_S)", "stmt_us", "us"),
    ("InnoDB: committing thread waits for the flushed LSN (per wait)", "commit_wait_us", "us"),
    ("  waits per commit", "commit_waited", "x"),
    ("  p50 / p99 of that wait", ("commit_wait_p50_us", "commit_wait_p99_us"), "us"),
    ("InnoDB log writer → client: Append/PutTail (copy + post)", "handoff_us", "us"),
    ("  log writes (groups) per commit; bytes per group", ("handoffs", "bytes_per_group"), "xB"),
    ("client: in-flight window wait per append", "window_wait_us", "us"),
    ("client: one message posted to a node's transport", "post_us", "us"),
    ("client: group queued → first node's durable ack", "first_ack_us", "us"),
    ("client: group queued → second node's durable ack", "second_ack_us", "us"),
    ("client: group queued → durable LSN advanced (quorum)", "durable_us", "us"),
    ("  p50 / p99", ("durable_p50_us", "durable_p99_us"), "us"),
    ("node: append received → worker (queue)", "node_append_queue_us", "us"),
    ("node: append write (page cache)", "node_append_write_us", "us"),
    ("node: written → sync thread (queue)", "node_sync_queue_us", "us"),
    ("node: fdatasync (per batch)", "node_fdatasync_us", "us"),
    ("  appends per fdatasync", "node_appends_per_sync", "x"),
    ("node: fdatasync done → durable ack sent", "node_ack_us", "us"),
    ("node: append received → durable ack sent", "node_append_total_us", "us"),
    ("node: tail received → worker (queue)", "node_tail_queue_us", "us"),
    ("node: tail register written (into the log's journal; synced with the group commit)", "node_tail_save_us", "us"),
    ("node: tail received → ack sent", "node_tail_total_us", "us"),
    ("  tails sent alone per commit per node; fdatasyncs of the log per commit per node",
     ("node_tails_per_commit", "node_syncs_per_commit"), "xx"),
    ("  requests (appends, tails alone) per commit per node", "node_requests_per_commit", "x"),
    ("client: durable LSN advanced → flusher running (wake)", "client_wake_us", "us"),
    ("  flusher wake-ups per client wait", "client_wakeups", "x"),
    ("InnoDB flusher: wait for the quorum (per flush)", "flusher_wait_us", "us"),
    ("  flushes per commit", "flusher_waits", "x"),
    ("InnoDB: wake-ups of the committing thread per wait", "commit_wakeups", "x"),
    ("context switches per commit: committing thread, in its wait", "commit_csw", "x"),
    ("context switches per commit: mysqld / nodes", ("mysqld_csw", "nodes_csw"), "xx"),
    ("CPU per commit: mysqld / nodes", ("mysqld_cpu_us", "nodes_cpu_us"), "us"),
    ("runnable, waiting for a CPU, per commit: mysqld / nodes", ("mysqld_runq_us", "nodes_runq_us"), "us"),
    ("local write+fdatasync loop, same bytes per group (mean / p50)", ("fdl_mean", "fdl_p50"), "us"),
]
STOCK_ROWS = [
    ("commit: INSERT statement, server side (P_S)", "stmt_us", "us"),
    ("redo write (P_S innodb_log_file write wait)", "redo_write_us", "us"),
    ("  redo writes per commit; bytes per fsync", ("redo_writes", "bytes_per_group"), "xB"),
    ("redo fsync (P_S innodb_log_file sync wait)", "redo_sync_us", "us"),
    ("  fsyncs per commit", "redo_fsyncs", "x"),
    ("context switches per commit: mysqld", "mysqld_csw", "x"),
    ("CPU per commit: mysqld", "mysqld_cpu_us", "us"),
    ("runnable, waiting for a CPU, per commit: mysqld", "mysqld_runq_us", "us"),
    ("local write+fdatasync loop, same bytes per group (mean / p50)", ("fdl_mean", "fdl_p50"), "us"),
]


def _values(rounds: list, key: str) -> list:
    if key in ("fdl_mean", "fdl_p50"):
        return [r["fdatasync_loop"][key.replace("fdl_", "") + "_ns"] / 1e3 for r in rounds]
    return [r.get(key) for r in rounds]


def _cell(rounds: list, key, unit: str) -> str:
    if isinstance(key, tuple):
        units = list(unit) if unit in ("xB", "xx") else [unit, unit]
        return " / ".join(fmt(_values(rounds, k), u) for k, u in zip(key, units))
    return fmt(_values(rounds, key), unit)


def render(meta: dict, results: dict, ts: list) -> str:
    when = datetime.fromtimestamp(meta["started"], timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    la, lb = meta["load_before"], meta["load_after"]
    lines = [f"# A commit's anatomy: stock vs the fork on three local log nodes ({when})", "",
             "Issue 32, first part: where one commit's time goes, measured from counters the code keeps "
             "(no debugger). Autocommit single-row INSERTs (`scripts/bench/lua/anatomy_insert.lua`), "
             "one event = one commit, `innodb_flush_log_at_trx_commit=1`.", "",
             "Reproduce:", "", "```sh", meta["command"], "```", "",
             "## Machine and load", "",
             f"- `uptime` at the end: `{meta['uptime']}`",
             f"- load average before / after: {la[0]:.2f} {la[1]:.2f} {la[2]:.2f} / {lb[0]:.2f} {lb[1]:.2f} {lb[2]:.2f}",
             f"- {os.cpu_count()} CPUs; sysbench, mysqld and the nodes all on this machine, nodes on loopback TCP "
             "and on the same disk",
             *[f"- `{k}`: {v}" for k, v in meta["versions"].items()],
             f"- {meta['rounds']} rounds, targets alternating (A B, B A, ...); per point {meta['warmup']} s warm-up "
             f"then {meta['time']} s measured; {meta['elapsed'] / 60:.0f} min in all", "",
             "## How to read it", "",
             "Each row is a stage's mean time **per event of that stage** (a group commit serves several commits; "
             "the rows marked per commit say how many events a commit causes), averaged over the rounds, "
             "± the 95% interval of that mean (Student's t over rounds; none with one round). "
             "Node rows are over all three nodes. p50/p99 come from the power-of-two histograms "
             "(within a factor of two). Derived rows are differences, not measurements.", ""]
    for n in meta["threads"]:
        lines += [f"## {n} thread{'s' if n > 1 else ''}", ""]
        for t in ts:
            rounds = results.get(f"{t.target.spec}|{n}", [])
            if not rounds:
                continue
            rows = FORK_ROWS if t.remote else STOCK_ROWS
            lines += [f"### `{t.target.spec}`: {fmt([r['tps'] for r in rounds], 'n')} commits/s", "",
                      "| stage | mean ± 95% |", "|---|---:|"]
            lines += [f"| {label} | {_cell(rounds, key, unit)} |" for label, key, unit in rows]
            lines.append("")
    lines += ["## Raw data", "",
              "sysbench output of every point and every snapshot's stages: `RAW_DIR/` next to this page "
              "(the full before/after snapshots stay in the run folder).", ""]
    return "\n".join(lines)


def main_args(sub) -> None:
    p = sub.add_parser("anatomy", help="one commit's latency by stage (issue 32), stock vs fork")
    p.add_argument("--target", action="append", help=f"targets (default: {', '.join(DEFAULT_TARGETS)})")
    p.add_argument("--threads", action="append", help="thread counts, comma-separated (default 1,16,64)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--time", type=int, default=20, help="measured seconds per point")
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--port", type=int, default=13306)
    p.add_argument("--out", help="run folder (default .build/bench/results/anatomy-DATE-*)")
    p.add_argument("--report", help="also write the page there, raw data beside it in <name>-raw/")
    p.add_argument("--sysbench", default="sysbench")
    p.add_argument("--data-dir", default=str(ROOT), help=f"server homes (default {ROOT})")


if __name__ == "__main__":
    sys.exit("run through scripts/strata-bench anatomy")
