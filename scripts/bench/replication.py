"""strata-bench replication: strong sync vs upstream semisync vs async, in one run (issue 8, benchmark b).

    scripts/strata-bench replication --time 30 --report docs/benchmarks/strong-sync-DATE.md

Starts a source and one replica of the fork on loopback (ports --port and
--port + 1, default 15000/15001; homes under --dir), GTID auto-position,
sync_binlog=1 and innodb_flush_log_at_trx_commit=1 on both, binary log on
both, replication_optimize_for_static_plugin_config and
replication_sender_observe_commit_only ON on both (as semisync deployments
run; docs/design/strong-sync.md). Both load all four plugins (semisync_source/replica and
strata_sync_source/replica) and each mode enables one pair only:

    async     no plugin enabled
    semisync  rpl_semi_sync_source AFTER_SYNC, timeout 10^9 ms (never falls back)
    strong    strata_sync_source, policy block, N = 1

Per point it also reports, from the servers' own counters (less sensitive
to a noisy machine than tps): the commit wait distribution (strong sync:
average, p50 and p99 from the difference of two snapshots of
Strata_sync_source_wait_histogram; semisync: average only), the ack round
trip (flagged event sent to ack read), and the CPU time (utime + stime,
all threads) the source and the replica mysqld used per transaction, and
the source's split by thread name (per-thread times from /proc: pool
workers, the dump thread, the plugins' own threads, InnoDB's), InnoDB row
lock waits and the source's context switches per transaction, and the
machine's time per transaction (/proc/stat: both servers, sysbench,
interrupts, steal, idle), which tells a mode that costs CPU from one that
leaves the CPUs idle while commits wait.
--source-ssl 0 makes the replication connection plain TCP (the server's
default is TLS); --modes runs a subset. A mode name with the suffix
"-unordered" (async-unordered, semisync-unordered, strong-unordered) runs
that mode with binlog_order_commits = OFF on the source: the group commit
leader then waits for the acknowledgement after the sync stage and outside
LOCK_commit, so the waits of consecutive groups overlap (design note
docs/design/strong-sync.md, section 9); the other modes run with ON.
The suffix "-aftercommit" (strong only: strong-aftercommit, also
strong-aftercommit-unordered) runs strong sync with
strata_sync_source_wait_point = AFTER_COMMIT: the transaction commits in the
engine and the session waits for the acknowledgement before its OK (with
--source-pool it parks without a worker, design note section 6.2); the other
strong modes wait at AFTER_SYNC. The suffix "-normalprio" (strong only,
before the others: strong-normalprio, strong-normalprio-aftercommit) runs
strong sync with the acknowledgement path at normal priority
(strata_sync_source_realtime_ack_path and
strata_sync_replica_realtime_receiver OFF); the other strong modes run it
with SCHED_RR, the default. --source-pool runs the source on the fork's
thread pool (strata_pool.so, thread_handling = pool-of-threads), as
`scripts/strata-cluster up` does; the replica keeps one thread per connection.
Any mode may end in @VAR=VALUE (repeatable): the source runs that mode's
windows with these global variables and the other modes with the value it
had after --source-set, so that a setting is compared within one run
(e.g. --modes async,strong,strong@binlog_order_commits=OFF).

A mode switch restarts the replica's receiver so it connects with that mode's
handshake and waits until the source sees it. Before every measurement the
replica applies everything it has (so no backlog of one is charged to the
next). Every (workload, threads) point runs each mode once per round; rounds
alternate the mode order (async, semisync, strong, then reversed), so a
drift of the shared machine does not favour one mode. --catch-up-every N
(with --replica-applier paused) lets the replica apply only before every
N-th round: the windows of a round then run back to back, a few seconds
apart instead of a minute, which matters on a VM whose speed drifts 10-20%
over minutes (short --time, many rounds). The report has every measurement,
the mean per mode and the ratio to async, the ratios per round with their
mean, the same ratios normalised by the VM's speed in each window
(sysbench's CPU per transaction; see paired_rounds for its blind spot), the
load average before each measurement, and the strong-sync waits per
transaction. Means come with their 95% interval over rounds (Student's t,
stats.py), as on every strata-bench page. --pool-results pools the rounds of
several runs' results.jsonl files. Binary logs are purged after each
catch-up, so runs do not fill the disk.

Shared with the other subcommands: the benchmark lock (lock.py), the one
sysbench runner (runner.run_sysbench: every window's raw output kept in the
run folder's raw/), the server launcher (strata_tools.mysqld.MysqldInstance)
and the statistics. The run folder (--out, default
.build/bench/results/<time>-replication) holds raw/, results.jsonl (every
measurement), windows.csv, report.md and plot-ratios.png.

Ctrl-C stops the servers it started. Needs sysbench and the fork built
(scripts/build-server fork).
"""
import csv
import json
import os
import re
import resource
import shlex
import time
from pathlib import Path

from strata_tools import paths
from strata_tools.mysqld import MysqldInstance

from . import lock as bench_lock
from . import stats as st
from . import sysbench as sb
from .runner import BenchError, Started, kill_group, run_sysbench
from .tools import require

MODES = ("async", "semisync", "strong")
UNORDERED = "-unordered"  # suffix: the mode with binlog_order_commits = OFF on the source
AFTER_COMMIT = "-aftercommit"  # suffix (strong only): strata_sync_source_wait_point = AFTER_COMMIT
# suffix (strong only): the ack path at normal priority on both servers
# (strata_sync_source_realtime_ack_path = OFF, strata_sync_replica_realtime_receiver = OFF)
NORMAL_PRIORITY = "-normalprio"


def split_mode(mode: str) -> tuple[str, list[tuple[str, str]]]:
    """'strong@var=1@other=OFF' -> ('strong', [('var', '1'), ('other', 'OFF')]): the mode and the
    source variables it runs with (the other modes run with the value it had after --source-set)."""
    name, *given = mode.split("@")
    return name, settings(given, f"mode {mode}")


def strip_suffix(mode: str, suffix: str) -> tuple[str, bool]:
    return (mode[: -len(suffix)], True) if mode.endswith(suffix) else (mode, False)


def mode_parts(mode: str) -> tuple[str, bool, bool]:
    """'strong-aftercommit-unordered' -> ('strong', unordered=True, after_commit=True).

    Suffixes go in the order base[-normalprio][-aftercommit][-unordered][@VAR=VALUE...]."""
    mode = split_mode(mode)[0]
    mode, unordered = strip_suffix(mode, UNORDERED)
    mode, after_commit = strip_suffix(mode, AFTER_COMMIT)
    mode, _ = strip_suffix(mode, NORMAL_PRIORITY)
    return mode, unordered, after_commit


def normal_priority(mode: str) -> bool:
    """True for a strong mode whose ack path runs at normal priority (-normalprio)."""
    mode = split_mode(mode)[0]
    mode, _ = strip_suffix(mode, UNORDERED)
    mode, _ = strip_suffix(mode, AFTER_COMMIT)
    return mode.endswith(NORMAL_PRIORITY)


def base_mode(mode: str) -> str:
    return mode_parts(mode)[0]


def valid_mode(mode: str) -> bool:
    base, _, after_commit = mode_parts(mode)
    strong_only = after_commit or normal_priority(mode)
    return base in MODES and (not strong_only or base == "strong")


COMMON = {
    "gtid-mode": "ON", "enforce-gtid-consistency": "ON", "log-bin": "binlog",
    "sync_binlog": "1", "innodb_flush_log_at_trx_commit": "1",
    "innodb_buffer_pool_size": str(1 << 30), "innodb_redo_log_capacity": str(1 << 30),
    "max_connections": "1000", "max_prepared_stmt_count": "200000",
    "table_open_cache": "4000",
    # The two upstream options semisync deployments set to cut the cost of
    # replication hooks (both plugin pairs are loaded in every mode, so their
    # observers run in every mode): no plugin lock around each hook call, and
    # the dump thread's before/after_send_event only for the events that end
    # a transaction. --source-set/--replica-set VAR=OFF measures without.
    "replication_optimize_for_static_plugin_config": "ON",
    "replication_sender_observe_commit_only": "ON",
}
SOURCE = dict(COMMON, **{"server-id": "1",
                         "plugin-load-add": "semisync_source.so;strata_sync_source.so"})
REPLICA = dict(COMMON, **{"server-id": "2", "relay-log": "relay-bin", "skip-replica-start": None,
                          "plugin-load-add": "semisync_replica.so;strata_sync_replica.so"})


def source_options(pool: bool) -> dict:
    if not pool:
        return SOURCE
    return dict(SOURCE, **{"plugin-load-add": SOURCE["plugin-load-add"] + ";strata_pool.so",
                           "thread_handling": "pool-of-threads"})


def settings(given: list[str], flag: str) -> list[tuple[str, str]]:
    """VAR=VALUE strings as (var, value), refusing anything that is not a plain name and value."""
    out = []
    for setting in given:
        var, _, value = setting.partition("=")
        if not re.fullmatch(r"[a-z_]+", var) or not re.fullmatch(r"[A-Za-z0-9_.]+", value):
            raise BenchError(f"{flag}: expected VAR=VALUE, got {setting!r}")
        out.append((var, value))
    return out


def say(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def status(inst: MysqldInstance, name: str) -> str:
    out = inst.sql(f"SHOW GLOBAL STATUS LIKE '{name}'").split("\t")
    return out[1].strip() if len(out) > 1 else ""


def wait_for(what: str, check, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise RuntimeError(f"timed out waiting for {what}")


def set_mode(src: MysqldInstance, rep: MysqldInstance, mode: str, order_per_mode: bool = False,
             per_mode_defaults: dict | None = None) -> None:
    """order_per_mode: -unordered modes are in the run, so every mode sets binlog_order_commits.
    per_mode_defaults: the source's values of the variables some mode of the run sets with @VAR=VALUE;
    a mode that does not set one runs with this value."""
    name = mode
    mode, unordered, after_commit = mode_parts(mode)
    if order_per_mode:
        src.sql("SET GLOBAL binlog_order_commits = %s" % ("OFF" if unordered else "ON"))
    src.sql("SET GLOBAL rpl_semi_sync_source_enabled = OFF; SET GLOBAL strata_sync_source_enabled = OFF")
    own = dict(split_mode(name)[1])
    for var, default in (per_mode_defaults or {}).items():
        src.sql(f"SET GLOBAL {var} = {own.get(var, default)}")
    realtime = "OFF" if normal_priority(name) else "ON"
    rep.sql("STOP REPLICA IO_THREAD")
    rep.sql("SET GLOBAL rpl_semi_sync_replica_enabled = %s; SET GLOBAL strata_sync_replica_enabled = %s; "
            "SET GLOBAL strata_sync_replica_realtime_receiver = %s"
            % ("ON" if mode == "semisync" else "OFF", "ON" if mode == "strong" else "OFF", realtime))
    if mode == "semisync":
        src.sql("SET GLOBAL rpl_semi_sync_source_wait_point = AFTER_SYNC; "
                "SET GLOBAL rpl_semi_sync_source_timeout = 1000000000; "
                "SET GLOBAL rpl_semi_sync_source_enabled = ON")
    elif mode == "strong":
        src.sql("SET GLOBAL strata_sync_source_policy = 'block'; SET GLOBAL strata_sync_source_replicas = 1; "
                "SET GLOBAL strata_sync_source_wait_point = %s; SET GLOBAL strata_sync_source_realtime_ack_path = %s; "
                "SET GLOBAL strata_sync_source_enabled = ON"
                % ("AFTER_COMMIT" if after_commit else "AFTER_SYNC", realtime))
    rep.sql("START REPLICA IO_THREAD")
    if mode == "semisync":
        wait_for("the semisync replica", lambda: status(src, "Rpl_semi_sync_source_clients") == "1"
                 and status(src, "Rpl_semi_sync_source_status") == "ON")
    elif mode == "strong":
        wait_for("the strong-sync replica",
                 lambda: status(src, "Strata_sync_source_replicas_connected") == "1")
    else:
        wait_for("the receiver", lambda: "Yes" in rep.sql(
            "SELECT SERVICE_STATE FROM performance_schema.replication_connection_status").replace("ON", "Yes"))


def catch_up(src: MysqldInstance, rep: MysqldInstance) -> None:
    gtids = src.sql("SELECT @@global.gtid_executed").strip().replace("\n", "").replace("\\n", "")
    rep.sql(f"SELECT WAIT_FOR_EXECUTED_GTID_SET('{gtids}', 1800)", timeout=1900)
    # Every window writes a few GB of binary log on each side; kept, they fill
    # the disk in a day of runs. Once the replica holds it all, no file but the
    # current one is needed (the source skips any a dump thread still reads).
    for inst in (src, rep):
        inst.sql("PURGE BINARY LOGS BEFORE NOW()")


# Processes this run started (sysbench), stopped by the clean-up if the run is interrupted.
STARTED = Started()


def sysbench(workload: str, port: int, args, threads: int, command: str) -> str:
    """One sysbench run through the shared runner; its output is kept in the run folder's raw/."""
    conn = sb.Connection("127.0.0.1", port)
    argv = [getattr(args, "sysbench", "sysbench"), *sb.base_args(workload, conn, args.tables, args.table_size),
            f"--threads={threads}", f"--time={args.time}", "--report-interval=0", "--percentile=95",
            "--rand-type=uniform", command]
    args.window_seq = getattr(args, "window_seq", 0) + 1
    log = Path(args.raw_dir) / f"{args.window_seq:03d}-{workload}-{threads}-{getattr(args, 'window_mode', command)}.txt"
    run = run_sysbench(argv, log, None, time.monotonic() + args.time + 600, STARTED)
    if run.exit_code != 0:
        why = sb.fatal_summary(run.output) or f"exit code {run.exit_code}"
        raise BenchError(f"sysbench {workload} {command} failed: {why} (log: {log})")
    return run.output


def parse(out: str) -> dict:
    """tps, qps, p95 and ignored errors of a sysbench report (the shared parser, sysbench.py)."""
    try:
        rep = sb.parse_report(out)
    except sb.ParseError:
        return {"tps": None, "qps": None, "p95_ms": None, "errors": None}
    return {"tps": rep.tps, "qps": rep.qps, "p95_ms": rep.p95_ms, "errors": rep.ignored_errors}


def cpu_seconds(inst: MysqldInstance) -> float:
    """utime + stime of the mysqld process (all threads), in seconds."""
    pid = inst.pid()
    if pid is None:
        return 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def thread_files(inst: MysqldInstance, name: str):
    """(tid, text of /proc/PID/task/TID/<name>) for each mysqld thread alive now."""
    pid = inst.pid()
    if pid is None:
        return
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            text = (task / name).read_text()
        except OSError:  # the thread exited meanwhile
            continue
        yield task.name, text


def thread_cpu_ticks(inst: MysqldInstance) -> dict:
    """utime + stime of each mysqld thread in clock ticks, keyed 'name/tid' (the name is the
    kernel's 15-character comm: connection, tp_worker, ib_log_flush, strata_ackread ...)."""
    out = {}
    for tid, text in thread_files(inst, "stat"):
        name = text[text.index("(") + 1:text.rindex(")")]
        fields = text.rsplit(")", 1)[1].split()
        out[f"{name}/{tid}"] = int(fields[11]) + int(fields[12])
    return out


# /proc/stat's "cpu" line, in order (clock ticks summed over all CPUs).
PROC_STAT_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def machine_ticks() -> dict:
    """Where the whole machine's time went so far: /proc/stat's cpu line, by field."""
    first = Path("/proc/stat").read_text().split("\n", 1)[0].split()
    return {name: int(v) for name, v in zip(PROC_STAT_FIELDS, first[1:])}


def client_cpu_seconds() -> float:
    """utime + stime of the finished children (sysbench), in seconds."""
    use = resource.getrusage(resource.RUSAGE_CHILDREN)
    return use.ru_utime + use.ru_stime


def context_switches(inst: MysqldInstance) -> int:
    """Voluntary + involuntary context switches of the mysqld threads alive now (a thread that
    blocks and is woken costs one voluntary switch, so this counts the sleeps of a window)."""
    return sum(int(line.split()[1]) for _, text in thread_files(inst, "status")
               for line in text.splitlines() if "ctxt_switches:" in line)


def cpu_by_thread_name(thread_ticks: dict, txns: float) -> dict:
    """Per-thread tick deltas ('name/tid' -> ticks) summed by thread name, in µs per transaction.
    Threads that exited during the window are missing (the process total still has them)."""
    by_name = {}
    for key, ticks in thread_ticks.items():
        name = key.rsplit("/", 1)[0]
        by_name[name] = by_name.get(name, 0) + ticks
    return {name: ticks / os.sysconf("SC_CLK_TCK") * 1e6 / txns for name, ticks in by_name.items()}


def machine_budget(d: dict, txns: float) -> dict:
    """The machine's time per transaction (all CPUs, µs) split into: the two servers, the client
    (sysbench), interrupts (softirq + irq: loopback TCP's receive side runs there), time the
    hypervisor took (steal), idle (idle + iowait), and the rest (other processes, this script)."""
    ticks = d.get("machine_ticks", {})
    if not ticks or not txns:
        return {}
    us = lambda t: t / os.sysconf("SC_CLK_TCK") * 1e6 / txns  # noqa: E731
    out = {"source": d["source_cpu_s"] * 1e6 / txns, "replica": d["replica_cpu_s"] * 1e6 / txns,
           "client": d.get("client_cpu_s", 0) * 1e6 / txns,
           "interrupts": us(ticks.get("softirq", 0) + ticks.get("irq", 0)),
           "steal": us(ticks.get("steal", 0)), "idle": us(ticks.get("idle", 0) + ticks.get("iowait", 0))}
    total = us(sum(ticks.values()))
    out["other"] = max(0.0, total - sum(out.values()))
    out["total"] = total
    return out


def histogram(text: str) -> dict:
    """Strata_sync_source_*_histogram: 'upper_us:count ...' -> {upper: count}."""
    out = {}
    for item in text.split():
        upper, _, count = item.partition(":")
        if upper.isdigit() and count.isdigit():
            out[int(upper)] = int(count)
    return out


def quantile(hist: dict, q: float) -> int:
    total = sum(hist.values())
    if total <= 0:
        return 0
    seen = 0
    for upper in sorted(hist):
        seen += hist[upper]
        if seen >= q * total:
            return upper
    return max(hist)


def counters(src: MysqldInstance, rep: MysqldInstance) -> dict:
    names = ["Strata_sync_source_waits", "Strata_sync_source_wait_time_us", "Strata_sync_source_acks",
             "Strata_sync_source_ack_rtts", "Strata_sync_source_ack_rtt_time_us",
             "Rpl_semi_sync_source_yes_tx", "Rpl_semi_sync_source_tx_waits",
             "Rpl_semi_sync_source_tx_wait_time", "Com_commit", "Threadpool_parks",
             "Innodb_row_lock_waits", "Innodb_row_lock_time", "Strata_sync_source_dump_thread_acks"]
    out = {n: int(status(src, n) or 0) for n in names}
    for n in ("Strata_sync_replica_acks_sent", "Strata_sync_replica_acks_coalesced",
              "Strata_sync_replica_ack_latency_us"):
        out[n] = int(status(rep, n) or 0)
    out["wait_hist"] = histogram(status(src, "Strata_sync_source_wait_histogram"))
    out["source_cpu_s"] = cpu_seconds(src)
    out["source_thread_ticks"] = thread_cpu_ticks(src)
    out["source_context_switches"] = context_switches(src)
    out["replica_cpu_s"] = cpu_seconds(rep)
    out["machine_ticks"] = machine_ticks()
    out["client_cpu_s"] = client_cpu_seconds()
    return out


def delta(after: dict, before: dict) -> dict:
    d = {}
    for k, v in after.items():
        if isinstance(v, dict):
            d[k] = {b: v[b] - before[k].get(b, 0) for b in v if v[b] - before[k].get(b, 0) > 0}
        else:
            d[k] = v - before[k]
    return d


def measure(src, rep, mode, workload, threads, args, catch_up_before=True, apply_after=True) -> dict:
    """With --replica-applier paused, catch_up_before=False measures right after the previous
    window (whose transactions the replica has not applied), and apply_after=False leaves the
    applier stopped for such a next window."""
    set_mode(src, rep, mode, order_per_mode=any(mode_parts(m)[1] for m in args.modes.split(",")),
             per_mode_defaults=getattr(args, "per_mode_defaults", None))
    paused = getattr(args, "replica_applier", "running") == "paused"
    if catch_up_before or not paused:
        catch_up(src, rep)
        if paused:
            rep.sql("STOP REPLICA SQL_THREAD")
    load = os.getloadavg()[0]
    args.window_mode = re.sub(r"[^A-Za-z0-9_.=-]+", "_", mode)
    before = counters(src, rep)
    t0 = time.monotonic()
    failed = True
    try:
        res = parse(sysbench(workload, src.port, args, threads, "run"))
        after = counters(src, rep)
        failed = False
    finally:
        if paused and (apply_after or failed):  # it applies them before the next catch-up
            rep.sql("START REPLICA SQL_THREAD")
    res.update(mode=mode, workload=workload, threads=threads, load1=load,
               seconds=round(time.monotonic() - t0, 1), delta=delta(after, before))
    txns = (res["tps"] or 0) * args.time
    d = res["delta"]
    if txns:
        res["source_cpu_us_per_txn"] = d["source_cpu_s"] * 1e6 / txns
        res["replica_cpu_us_per_txn"] = d["replica_cpu_s"] * 1e6 / txns
        by_thread = cpu_by_thread_name(d.get("source_thread_ticks", {}), txns)
        # Threads gone by the second snapshot (one thread per connection: most of sysbench's
        # connection threads) are in the process's total only.
        by_thread["(exited threads)"] = max(0.0, res["source_cpu_us_per_txn"] - sum(by_thread.values()))
        res["source_cpu_us_per_txn_by_thread"] = by_thread
        # Why the workers spend more per transaction when commits wait: row lock waits (locks held
        # through the wait) and sleeps (context switches of the threads alive at both ends).
        res["row_lock_waits_per_txn"] = d["Innodb_row_lock_waits"] / txns
        res["row_lock_ms_per_txn"] = d["Innodb_row_lock_time"] / txns
        res["source_switches_per_txn"] = max(0, d["source_context_switches"]) / txns
        res["machine_us_per_txn"] = machine_budget(d, txns)
    if base_mode(mode) == "strong" and txns:
        res["waits_per_txn"] = d["Strata_sync_source_waits"] / txns
        res["wait_us_per_wait"] = (d["Strata_sync_source_wait_time_us"] / d["Strata_sync_source_waits"]
                                   if d["Strata_sync_source_waits"] else 0)
        res["wait_p50_us"] = quantile(d["wait_hist"], 0.5)
        res["wait_p99_us"] = quantile(d["wait_hist"], 0.99)
        res["ack_rtt_us"] = (d["Strata_sync_source_ack_rtt_time_us"] / d["Strata_sync_source_ack_rtts"]
                             if d["Strata_sync_source_ack_rtts"] else 0)
        res["acks_per_txn"] = d["Strata_sync_source_acks"] / txns
        # TLS: the share of acks the dump thread read (it had the read turn), the rest the ack reader.
        res["dump_thread_ack_share"] = (d["Strata_sync_source_dump_thread_acks"] / d["Strata_sync_source_acks"]
                                        if d["Strata_sync_source_acks"] else 0)
        # The replica's share of the round trip: flagged event read to ack sent.
        res["replica_ack_us"] = (d["Strata_sync_replica_ack_latency_us"] / d["Strata_sync_replica_acks_sent"]
                                 if d["Strata_sync_replica_acks_sent"] else 0)
    if base_mode(mode) == "semisync" and txns:
        res["waits_per_txn"] = d["Rpl_semi_sync_source_tx_waits"] / txns
        res["wait_us_per_wait"] = (d["Rpl_semi_sync_source_tx_wait_time"] / d["Rpl_semi_sync_source_tx_waits"]
                                   if d["Rpl_semi_sync_source_tx_waits"] else 0)
    say(f"{workload} {threads} thr {mode}: {res['tps']} tps, p95 {res['p95_ms']} ms, load {load:.2f}, "
        f"cpu/txn source {res.get('source_cpu_us_per_txn', 0):.0f} us replica "
        f"{res.get('replica_cpu_us_per_txn', 0):.0f} us, wait avg {res.get('wait_us_per_wait', 0):.0f} "
        f"p50 {res.get('wait_p50_us', 0)} p99 {res.get('wait_p99_us', 0)} us, "
        f"ack rtt {res.get('ack_rtt_us', 0):.0f} us (replica {res.get('replica_ack_us', 0):.0f} us)")
    return res


def points_of(results: list[dict]) -> list[tuple]:
    """The (workload, threads) points of the results, in the order first run."""
    return list(dict.fromkeys((r["workload"], r["threads"]) for r in results))


def client_us(r: dict):
    """sysbench's CPU per transaction in a window, or None where it was not measured."""
    return (r.get("machine_us_per_txn") or {}).get("client") or None


def mean_ci(values: list[float]) -> str:
    """Mean ± 95% half-interval (Student's t over the rounds), the statistic of every page."""
    iv = st.interval(values)
    return f"{iv.mean:.3f}" if iv.n < 2 else f"{iv.mean:.3f} ± {iv.half:.3f}"


def paired_rounds(results: list[dict], modes: list[str]) -> dict:
    """{(workload, threads, mode): [(ratio to async, normalised ratio or None), ...]} for every
    mode but async, one pair per round in the order run (a round runs every mode once).

    The normalised ratio takes the VM's speed out of the round: sysbench does the same work
    per transaction whatever the replication mode, so its CPU per transaction reads how fast
    the shared vCPUs ran in that window (it moves by ±20% between windows, in step with the
    source's CPU per transaction); ratio x (client µs/txn in the mode's window / in async's)
    is the ratio at one speed. It also takes out what a mode costs the whole machine (more
    context switches and colder caches slow sysbench too: binlog_order_commits=OFF reads 0.835
    raw, 0.989 normalised, steadily), so it shows the drift; verdicts go by raw means over many
    rounds. None where a window has no client CPU measured."""
    pairs = {}
    for w, t in points_of(results):
        runs = [r for r in results if r["workload"] == w and r["threads"] == t]
        for i in range(0, len(runs), len(modes)):
            rnd = runs[i:i + len(modes)]
            a = [r for r in rnd if r["mode"] == "async" and r["tps"]]
            if not a:
                continue
            for m in modes:
                x = [r for r in rnd if r["mode"] == m and r["tps"] is not None]
                if m == "async" or not x:
                    continue
                ratio = x[0]["tps"] / a[0]["tps"]
                normalised = (ratio * client_us(x[0]) / client_us(a[0])
                              if client_us(a[0]) and client_us(x[0]) else None)
                pairs.setdefault((w, t, m), []).append((ratio, normalised))
    return pairs


def round_ratios(results: list[dict], modes: list[str], goals=None) -> list[str]:
    """Per point and mode, the ratio to async of each round, in the order run, and their mean with
    its 95% interval (Student's t over rounds); with goals, a verdict when it clears them; then the same rounds
    normalised by the VM's speed (paired_rounds): their spread is three to five times smaller,
    which shows how much of the raw spread is drift (see paired_rounds for what else it hides)."""
    if "async" not in modes or len(modes) < 2:
        return []
    out = ["", "Per round, ratio to async (in the order run; mean ± 95% half-interval last):", ""]
    normalised_lines = []
    pooled = {}
    for (w, t, m), pairs in paired_rounds(results, modes).items():
        ratios = [r for r, _ in pairs]
        goal = st.target_for(goals or [], m, t) or st.target_for(goals or [], base_mode(m), t)
        verdict = ""
        if goal:
            v = st.verdict(st.interval(ratios), goal.ratio)
            verdict = {None: "; no interval", st.OPEN: f"; open (holds {goal.ratio:g})"}.get(
                v, f"; {v} (≥ {goal.ratio:g})")
        out.append(f"- {w} {t} {m}/async: " + ", ".join(f"{v:.2f}" for v in ratios)
                   + f" (mean {mean_ci(ratios)}{verdict})")
        normalised = [n for _, n in pairs if n is not None]
        if normalised and len(normalised) == len(ratios):
            pooled.setdefault(m, []).extend(normalised)
            normalised_lines.append(f"- {w} {t} {m}/async: " + ", ".join(f"{v:.2f}" for v in normalised)
                                    + f" (mean {mean_ci(normalised)})")
    if normalised_lines:
        out += ["", "The same rounds normalised by the VM's speed in each window (ratio x sysbench's "
                "CPU per transaction in the mode's window / in async's). This shows how much of the spread "
                "is the VM's drift; it also hides what a mode costs the whole machine (sysbench included), "
                "so judge by the raw means:", ""] + normalised_lines
        out += [f"- all points, {m}/async: mean {mean_ci(v)} over {len(v)} rounds" for m, v in pooled.items()]
    return out


def pooled_rounds(files: list[Path], only: set[str]) -> list[str]:
    """The rounds of several runs (--results files) pooled by point and mode: a markdown table of
    rounds, raw mean and normalised mean, each ± its 95% half-interval. Each file's rounds are paired within that
    file (its own modes, in the order first run); only the modes in `only` are pooled, so runs
    with extra modes (a setting under test) add their plain rounds."""
    by_point, overall = {}, {}
    for f in files:
        results = [json.loads(line) for line in f.read_text().splitlines() if line.strip()]
        modes = list(dict.fromkeys(r["mode"] for r in results))
        for (w, t, m), pairs in paired_rounds(results, modes).items():
            if m in only:
                by_point.setdefault((w, t, m), []).extend(pairs)
                overall.setdefault(("all", 0, m), []).extend(pairs)
    lines = ["| point | mode | rounds | raw mean ± 95% | normalised mean ± 95% |",
             "| --- | --- | --- | --- | --- |"]
    for (w, t, m), pairs in sorted(by_point.items()) + sorted(overall.items()):
        raw = [r for r, _ in pairs]
        normalised = [n for _, n in pairs if n is not None]
        cell = mean_ci(normalised) if len(normalised) == len(raw) else "-"
        lines.append(f"| {w}{f' {t}' if t else ''} | {m}/async | {len(raw)} | {mean_ci(raw)} | {cell} |")
    return lines


def thread_cpu_table(results: list[dict], modes: list[str], floor_us: float = 1.0) -> list[str]:
    """Source CPU per transaction by thread name, mean over a point's rounds, one column per mode;
    names under floor_us in every mode are summed into one row."""
    lines = ["", "Source CPU per transaction by thread name (µs, mean over rounds; \"(exited threads)\" is "
             "the process total less the threads alive at the end of the window):", "",
             "| workload | threads | thread | " + " | ".join(modes) + " |",
             "|" + " --- |" * (3 + len(modes))]
    for w, t in points_of(results):
        mean = {}
        for m in modes:
            rs = [r.get("source_cpu_us_per_txn_by_thread") or {} for r in results
                  if r["workload"] == w and r["threads"] == t and r["mode"] == m]
            names = {n for r in rs for n in r}
            mean[m] = {n: sum(r.get(n, 0) for r in rs) / len(rs) for n in names} if rs else {}
        names = sorted({n for m in modes for n in mean[m]}, key=lambda n: -max(mean[m].get(n, 0) for m in modes))
        small = [n for n in names if max(mean[m].get(n, 0) for m in modes) < floor_us]
        for n in names:
            if n not in small:
                lines.append(f"| {w} | {t} | {n} | " + " | ".join(f"{mean[m].get(n, 0):.1f}" for m in modes) + " |")
        if small:
            lines.append(f"| {w} | {t} | {len(small)} others | "
                         + " | ".join(f"{sum(mean[m].get(n, 0) for n in small):.1f}" for m in modes) + " |")
    return lines if len(lines) > 5 else []


def machine_budget_table(results: list[dict], modes: list[str]) -> list[str]:
    """Where the machine's time per transaction went (machine_budget), mean over a point's rounds."""
    parts = ("source", "replica", "client", "interrupts", "steal", "idle", "other", "total")
    lines = ["", "The machine's time per transaction (µs over all CPUs, mean over rounds): the two servers, "
             "sysbench, interrupts (softirq + irq), steal, idle (+ iowait), the rest:", "",
             "| workload | threads | mode | " + " | ".join(parts) + " |", "|" + " --- |" * (3 + len(parts))]
    for w, t in points_of(results):
        for m in modes:
            rs = [r.get("machine_us_per_txn") for r in results
                  if r["workload"] == w and r["threads"] == t and r["mode"] == m]
            rs = [r for r in rs if r]
            if rs:
                lines.append(f"| {w} | {t} | {m} | "
                             + " | ".join(f"{sum(r[p] for r in rs) / len(rs):.0f}" for p in parts) + " |")
    return lines if len(lines) > 5 else []


def report(results: list[dict], args, command: str, started: str, load_start) -> str:
    modes = [m for m in args.modes.split(",")]
    lines = [f"Command: `{command}`", "",
             f"Started {started} UTC; load average at start {load_start[0]:.2f} {load_start[1]:.2f} "
             f"{load_start[2]:.2f}; {os.cpu_count()} CPUs; source and replica on this machine"
             + ("; the source on the thread pool (strata_pool)." if getattr(args, "source_pool", False)
                else "; one thread per connection on both.")
             + (" The replica's applier was stopped while each point was measured (it caught up between"
                " points; receiver and acknowledgements ran as usual)."
                if getattr(args, "replica_applier", "running") == "paused"
                and getattr(args, "catch_up_every", 1) == 1 else "")
             + (" The replica's applier was stopped while measuring and caught up "
                + (f"every {args.catch_up_every} rounds only" if getattr(args, "catch_up_every", 1) > 1
                   else "once per point only")
                + " (the windows between ran back to back; receiver and acknowledgements ran as usual)."
                if getattr(args, "replica_applier", "running") == "paused"
                and getattr(args, "catch_up_every", 1) != 1 else ""), "",
             "| workload | threads | " + " | ".join(f"{m} tps" for m in modes) + " | "
             + " | ".join(f"{m}/async" for m in modes if m != "async") + " | "
             + " | ".join(f"{m} p95 ms" for m in modes) + " |",
             "|" + " --- |" * (2 + 3 * len(modes) - ("async" in modes))]
    points = points_of(results)
    for w, t in points:
        by = {m: [r for r in results if r["workload"] == w and r["threads"] == t and r["mode"] == m]
              for m in modes}
        tps = {m: st.interval(r["tps"] for r in by[m]) for m in modes}
        p95 = {m: st.interval(r["p95_ms"] for r in by[m]) for m in modes}
        pairs = paired_rounds([r for r in results if r["workload"] == w and r["threads"] == t], modes)

        def ratio(m):  # the mean of the per-round ratios; "-" without an async measurement to divide by
            got = pairs.get((w, t, m))
            return mean_ci([r for r, _ in got]) if got else "-"

        def cell(iv, fmt):
            return "-" if iv is None else (f"{iv.mean:{fmt}}" + (f" ± {iv.half:{fmt}}" if iv.n > 1 else ""))
        lines.append(f"| {w} | {t} | " + " | ".join(cell(tps[m], ".0f") for m in modes) + " | "
                     + " | ".join(ratio(m) for m in modes if m != "async") + " | "
                     + " | ".join(cell(p95[m], ".1f") for m in modes) + " |")
    lines += round_ratios(results, modes, getattr(args, "goals", None))
    lines += ["", "Server-side numbers (means over rounds): commit waits (strong: from the wait histogram; "
              "semisync: average only), ack round trip (flagged event sent to ack read) and the replica's "
              "share of it (flagged event read to ack sent), mysqld CPU per transaction:", "",
              "| workload | threads | mode | waits/txn | wait avg µs | wait p50 µs | wait p99 µs | ack rtt µs "
              "| replica share µs | source CPU µs/txn | replica CPU µs/txn | row lock waits/txn "
              "| row lock ms/txn | source switches/txn |",
              "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for w, t in points:
        for m in modes:
            rs = [r for r in results if r["workload"] == w and r["threads"] == t and r["mode"] == m]
            if not rs:
                continue
            avg = lambda k: sum(r.get(k, 0) or 0 for r in rs) / len(rs)  # noqa: E731

            def cell(key, fmt, kinds):  # "-" where the mode has no such number
                return format(avg(key), fmt) if base_mode(m) in kinds else "-"
            lines.append(f"| {w} | {t} | {m} | {cell('waits_per_txn', '.3f', ('semisync', 'strong'))} "
                         f"| {cell('wait_us_per_wait', '.0f', ('semisync', 'strong'))} "
                         f"| {cell('wait_p50_us', '.0f', ('strong',))} | {cell('wait_p99_us', '.0f', ('strong',))} "
                         f"| {cell('ack_rtt_us', '.0f', ('strong',))} | {cell('replica_ack_us', '.0f', ('strong',))} "
                         f"| {avg('source_cpu_us_per_txn'):.0f} | {avg('replica_cpu_us_per_txn'):.0f} "
                         f"| {avg('row_lock_waits_per_txn'):.4f} | {avg('row_lock_ms_per_txn'):.3f} "
                         f"| {avg('source_switches_per_txn'):.1f} |")
    lines += thread_cpu_table(results, modes)
    lines += machine_budget_table(results, modes)
    lines += ["", "Every measurement, in the order run (tps, p95 ms, load average before the point):", "",
              "| # | workload | threads | mode | tps | p95 ms | load1 |", "| --- | --- | --- | --- | --- | --- | --- |"]
    for i, r in enumerate(results, 1):
        lines.append(f"| {i} | {r['workload']} | {r['threads']} | {r['mode']} | {r['tps']:.0f} "
                     f"| {r['p95_ms']} | {r['load1']:.2f} |")
    return "\n".join(lines) + "\n"


def catch_up_points(windows: int, per_round: int, every: int) -> set[int]:
    """Indexes of the windows of one point the replica catches up before: the first of every
    `every`-th round (every 1: each window, the default; 0: the point's first only)."""
    if every == 1:
        return set(range(windows))
    if every <= 0:
        return {0}
    return set(range(0, windows, every * per_round))


WINDOW_COLUMNS = ["seq", "workload", "threads", "mode", "tps", "qps", "p95_ms", "errors", "load1", "seconds",
                  "source_cpu_us_per_txn", "replica_cpu_us_per_txn", "waits_per_txn", "wait_us_per_wait",
                  "ack_rtt_us"]


def write_windows_csv(path: Path, results: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=WINDOW_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for i, r in enumerate(results, 1):
            w.writerow(dict(r, seq=i))


def plot_ratios(results: list[dict], modes: list[str], path: Path) -> Path | None:
    """Per point and mode: each round's ratio to async (dots) and their mean with its 95% interval."""
    from . import report as rp
    pairs = paired_rounds(results, modes)
    if not pairs:
        return None
    plt = rp.pyplot()
    keys = list(pairs)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.3 * len(keys)), 4.2))
    for i, key in enumerate(keys):
        ratios = [r for r, _ in pairs[key]]
        iv = st.interval(ratios)
        ax.scatter([i] * len(ratios), ratios, s=12, color="black", alpha=0.5, zorder=3)
        ax.errorbar([i], [iv.mean], yerr=[iv.half if iv.n > 1 else 0], fmt="o", capsize=6,
                    color=rp.COLORS[modes.index(key[2]) % len(rp.COLORS)])
    ax.axhline(1.0, color="grey", linewidth=1)
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([f"{w}\n{t} thr\n{m}" for w, t, m in keys], fontsize=7)
    ax.set_ylabel("tps / async (same round)")
    ax.set_title("ratio to async per round: mean, 95% interval, rounds")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def check_args(args, argv: list[str]) -> None:
    bad = [m for m in args.modes.split(",") if not valid_mode(m)]
    if bad:
        raise BenchError(f"--modes: unknown mode(s) {', '.join(bad)}")
    if any(mode_parts(m)[1] for m in args.modes.split(",")) and any(
            s.startswith("binlog_order_commits") for s in args.source_set):
        raise BenchError("--source-set binlog_order_commits conflicts with -unordered modes")
    if any(s.startswith("strata_sync_source_wait_point") for s in args.source_set):
        raise BenchError("--source-set strata_sync_source_wait_point: use the -aftercommit modes "
                         "(strong modes set the wait point themselves)")
    if args.catch_up_every != 1 and args.replica_applier != "paused":
        raise BenchError("--catch-up-every needs --replica-applier paused (a running applier applies as it goes)")
    if args.port < 15000:
        raise BenchError("--port must be >= 15000 (lower ports belong to other benchmarks)")
    if args.rounds < 1 or args.time < 1:
        raise BenchError("--rounds and --time must be at least 1")


def main_args(sub) -> None:
    ap = sub.add_parser("replication", help="async vs semisync vs strong sync with one replica "
                                            "(replaces scripts/bench/replication.py)",
                        description=__doc__.split("\n\n")[0])
    ap.add_argument("--time", type=int, default=30, help="seconds per measurement (default 30)")
    ap.add_argument("--threads", default="64,256")
    ap.add_argument("--workloads", default="oltp_write_only,oltp_update_non_index")
    ap.add_argument("--rounds", type=int, default=2, help="rounds; even rounds reverse the mode order")
    ap.add_argument("--modes", default=",".join(MODES),
                    help="modes in run order: async, semisync, strong, each also with the suffix -unordered; "
                         "strong also as strong-aftercommit (and strong-aftercommit-unordered); any mode "
                         "with @VAR=VALUE suffixes runs with these source variables (e.g. "
                         "strong@binlog_order_commits=OFF)")
    ap.add_argument("--source-ssl", type=int, choices=(0, 1), default=1,
                    help="SOURCE_SSL of the replication channel (1: TLS, the server's default)")
    ap.add_argument("--source-pool", action="store_true",
                    help="run the source on the fork's thread pool (strata_pool.so, pool-of-threads)")
    ap.add_argument("--source-set", action="append", default=[], metavar="VAR=VALUE",
                    help="SET GLOBAL on the source after it starts, e.g. binlog_order_commits=OFF (repeatable)")
    ap.add_argument("--replica-set", action="append", default=[], metavar="VAR=VALUE",
                    help="SET GLOBAL on the replica (its replication threads stopped meanwhile), e.g. "
                         "replica_parallel_workers=16 (repeatable)")
    ap.add_argument("--catch-up-every", type=int, default=1, metavar="N",
                    help="with --replica-applier paused: the replica applies its backlog before every "
                         "N-th round only (1: before every measurement, the default; 0: once per point), so "
                         "the windows between run back to back")
    ap.add_argument("--replica-applier", choices=("running", "paused"), default="running",
                    help="paused: the replica's applier is stopped while a point is measured and catches "
                         "up between points. Strong sync and semisync need only its receiver; on one "
                         "machine the applier (its coordinator waits for a free worker with sched_yield) "
                         "takes CPU that a replica on its own host would not take from the source")
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--table-size", type=int, default=25000)
    ap.add_argument("--port", type=int, default=15000, help="source port; the replica uses port + 1")
    ap.add_argument("--dir", type=Path, default=paths.BUILD / "bench" / "replication",
                    help="the servers' homes (kept between runs, with the prepared tables)")
    ap.add_argument("--out", type=Path, help="run folder (default .build/bench/results/<time>-replication)")
    ap.add_argument("--results", type=Path, help="also append every measurement as JSON lines here")
    ap.add_argument("--report", type=Path, help="also write the markdown page here")
    ap.add_argument("--target-ratio", action="append", metavar="MODE[@THREADS]=RATIO",
                    help="a target for a mode's tps over async's, e.g. strong=0.95: met / not met when the "
                         "95%% interval over rounds clears it")
    ap.add_argument("--sysbench", default="sysbench", help="the sysbench program")
    ap.add_argument("--pool-results", type=Path, nargs="+", metavar="FILE",
                    help="start no server: pool the rounds of earlier runs' results.jsonl files by point and "
                         "mode (those of --modes but async; semisync,strong unless given) and print the table")


def run(args, argv: list[str]) -> int:
    if args.pool_results:
        given = "--modes" in argv or any(a.startswith("--modes=") for a in argv)
        only = set(args.modes.split(",")) if given else {"semisync", "strong"}
        print("\n".join(pooled_rounds(args.pool_results, only - {"async"})))
        return 0
    check_args(args, argv)
    args.goals = st.parse_targets(args.target_ratio)
    require("sysbench")

    lock = bench_lock.hold(say, "strata-bench replication")  # noqa: F841 (held until exit)
    out = args.out or paths.BUILD / "bench" / "results" / f"{time.strftime('%Y%m%d-%H%M%S')}-replication"
    args.raw_dir = out / "raw"
    args.raw_dir.mkdir(parents=True, exist_ok=True)
    results_file = out / "results.jsonl"
    build = paths.server_build("fork")
    src = MysqldInstance("source", build, args.dir / "source", args.port, source_options(args.source_pool))
    rep = MysqldInstance("replica", build, args.dir / "replica", args.port + 1, REPLICA)
    command = "scripts/strata-bench " + shlex.join(argv)
    started = time.strftime("%Y-%m-%d %H:%M", time.gmtime())
    load_start = os.getloadavg()  # after the lock: no other benchmark runs
    results = []
    say(f"strata-bench replication: results in {out}")
    try:
        for inst in (src, rep):
            say(f"starting {inst.name} on 127.0.0.1:{inst.port}")
            inst.start(timeout=600)
        if not rep.sql("SHOW REPLICA STATUS").strip():
            rep.sql(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={args.port}, "
                    "SOURCE_USER='root', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1")
        for var, value in settings(args.source_set, "--source-set"):
            src.sql(f"SET GLOBAL {var} = {value}")
        rep.sql(f"STOP REPLICA; CHANGE REPLICATION SOURCE TO SOURCE_SSL={args.source_ssl}")
        for var, value in settings(args.replica_set, "--replica-set"):
            rep.sql(f"SET GLOBAL {var} = {value}")
        rep.sql("START REPLICA")
        per_mode_vars = dict.fromkeys(var for m in args.modes.split(",") for var, _ in split_mode(m)[1])
        args.per_mode_defaults = {var: src.sql(f"SELECT @@global.{var}").strip() for var in per_mode_vars}
        marker = args.dir / f"prepared-{args.tables}x{args.table_size}"
        if not marker.exists():
            say(f"preparing {args.tables} x {args.table_size} rows (replicated)")
            src.sql("DROP DATABASE IF EXISTS sbtest; CREATE DATABASE sbtest")
            sysbench("oltp_write_only", src.port, args, 4, "prepare")
            catch_up(src, rep)
            marker.write_text("ok\n")
        for workload in args.workloads.split(","):
            for threads in (int(t) for t in args.threads.split(",")):
                modes = tuple(args.modes.split(","))
                windows = [mode for rnd in range(args.rounds)
                           for mode in (modes if rnd % 2 == 0 else tuple(reversed(modes)))]
                catches = catch_up_points(len(windows), len(modes), args.catch_up_every)
                for i, mode in enumerate(windows):
                    results.append(measure(src, rep, mode, workload, threads, args,
                                           catch_up_before=i in catches,
                                           apply_after=i + 1 in catches or i + 1 == len(windows)))
                    for path in filter(None, (results_file, args.results)):
                        with open(path, "a") as f:
                            f.write(json.dumps(results[-1]) + "\n")
        set_mode(src, rep, "async", per_mode_defaults=args.per_mode_defaults)
    finally:
        for proc in list(STARTED.procs):
            kill_group(proc, grace=2.0)
        for inst in (rep, src):
            say(f"stopping {inst.name}: {inst.stop(grace_seconds=300)}")
    text = report(results, args, command, started, load_start)
    write_windows_csv(out / "windows.csv", results)
    try:
        plot = plot_ratios(results, args.modes.split(","), out / "plot-ratios.png")
    except Exception as e:  # matplotlib missing: the tables are the record
        plot = None
        say(f"warning: plot skipped: {e}")
    if plot:
        text += "\n![ratios to async](plot-ratios.png)\n\nRaw sysbench output of every window: `raw/`.\n"
    (out / "report.md").write_text(text)
    print(text)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        if plot:
            import shutil
            shutil.copyfile(plot, args.report.parent / f"{args.report.stem}-plot-ratios.png")
            text = text.replace("(plot-ratios.png)", f"({args.report.stem}-plot-ratios.png)")
        args.report.write_text(text)
    print(f"results: {out}")
    return 0
