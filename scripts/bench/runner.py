"""Runs a plan: servers one at a time, sysbench per point, results as they come.

Threads and processes. One Python thread drives everything; one helper
thread per sysbench run only copies its stdout into a queue (so the driver
can show progress, enforce a deadline and react to a signal while sysbench
runs). mysqld and sysbench run in their own sessions: a Ctrl-C on the
terminal reaches only the driver, which then stops them itself, in order.

Ownership and clean-up. Every process the driver starts is registered in
Started before it can outlive a function: sysbench by its Popen, mysqld by
its server handle (found again by its pid file, or by the exact
--defaults-file=<its my.cnf> argument if it died before writing one).
Runner.close() (called from a finally) stops sysbench first, then the
servers, last started first. While it runs, further SIGINT/SIGTERM only
print a note: stopping mysqld takes seconds, and an interrupted shutdown
would leave exactly the orphans this is here to prevent.

Failures. A point whose sysbench fails (exit code, FATAL line, no report,
deadline) is recorded as failed with sysbench's own error line and the run
goes on; if its server died, the next point restarts it, and a server that
does not start ends the run with a one-line error. Results already measured
stay in points.csv.
"""
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

from . import sysbench as sb
from .client_machine import ClientMachine
from .plan import Plan, Step, format_duration
from .report import CsvLog, PointResult
from .scenarios import LUA_DIR, Dataset
from .targets import (Target, dir_bytes, forget_dataset, home_of, marker_matches, read_marker,
                      write_marker)


# Before each point: wait for InnoDB's history list to drop to this, for at most this long.
PURGE_DONE = 1000
PURGE_WAIT = 120


class BenchError(RuntimeError):
    """Ends the run; the message is one line for the user."""


class Interrupted(BaseException):
    """SIGINT/SIGTERM/SIGHUP arrived; unwinds to the clean-up."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


class Server(Protocol):
    """What the runner needs of a server (MysqldServer; a fake in the tests)."""
    name: str
    home: Path
    port: int

    @property
    def datadir(self) -> Path: ...
    def start(self) -> None: ...
    def stop(self) -> str: ...
    def running(self) -> bool: ...
    def sql(self, statement: str) -> str: ...
    def leftover_pids(self) -> list[int]: ...
    def purge_backlog(self) -> int | None: ...
    def describe_failure(self, error: Exception) -> str: ...


ServerFactory = Callable[[Target, Dataset, Path, int], Server]


# ---------------------------------------------------------------- progress

class Progress:
    """One status line that rewrites itself on a terminal, a line every 30 s in a log."""

    def __init__(self, stream=sys.stderr, every: float = 30.0):
        self.stream = stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()
        self.every = every
        self._last = 0.0
        self._shown = False

    def status(self, text: str, force: bool = False) -> None:
        if self.tty:
            width = 160
            self.stream.write("\r\x1b[K" + text[:width])
            self.stream.flush()
            self._shown = True
        else:
            now = time.monotonic()
            if force or now - self._last >= self.every:
                self.stream.write(text + "\n")
                self.stream.flush()
                self._last = now

    def say(self, text: str) -> None:
        if self.tty and self._shown:
            self.stream.write("\r\x1b[K")
            self._shown = False
        self.stream.write(text + "\n")
        self.stream.flush()


# ---------------------------------------------------------------- processes

def pids_with_arg(arg: str) -> list[int]:
    """Processes whose command line holds exactly this argument (our my.cnf path)."""
    want = arg.encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if want in argv:
            found.append(int(entry))
    return found


def kill_group(proc: subprocess.Popen, grace: float = 5.0) -> None:
    """SIGTERM the process group of a child started in its own session, then SIGKILL."""
    if proc.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, grace), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class SysbenchRun:
    exit_code: int | None
    output: str
    timed_out: bool = False


def run_sysbench(argv: list[str], log: Path, on_line: Callable[[str], None] | None, deadline: float,
                 started: "Started", stdin=subprocess.DEVNULL) -> SysbenchRun:
    """The one way every strata-bench subcommand runs sysbench: in its own session, registered in
    `started` while it runs (so a clean-up stops it), every line copied to `log` (the raw output
    kept in the run folder, the command line first) and handed to `on_line`; killed at `deadline`."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "w") as out:
        out.write("# " + " ".join(argv) + "\n")
        out.flush()
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace",
                                start_new_session=True, bufsize=1)
        started.procs.append(proc)
        lines: queue.Queue = queue.Queue()

        def pump():
            for line in proc.stdout:
                lines.put(line)
            lines.put(None)
        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        chunks = []
        timed_out = False
        try:
            while True:
                try:
                    line = lines.get(timeout=0.5)
                except queue.Empty:
                    if time.monotonic() > deadline:
                        timed_out = True
                        kill_group(proc)
                    continue
                if line is None:
                    break
                chunks.append(line)
                out.write(line)
                if on_line:
                    on_line(line.rstrip("\n"))
            proc.wait()
        finally:
            kill_group(proc)
            reader.join(timeout=5)
            proc.stdout.close()
            if proc.stdin:
                proc.stdin.close()
            started.procs.remove(proc)
    return SysbenchRun(proc.returncode, "".join(chunks), timed_out)


class Started:
    """Everything started by this run that must be stopped at the end."""

    def __init__(self):
        self.procs: list[subprocess.Popen] = []
        self.servers: list[Server] = []

    def add_server(self, server: Server) -> None:
        if server not in self.servers:
            self.servers.append(server)


# ---------------------------------------------------------------- the runner

# How sysbench's threads are scheduled (--client-policy). "normal": as any
# process. "batch": SCHED_BATCH, so a client thread woken by a response does
# not preempt the server thread that sent it (it runs at the next tick or
# when a CPU is free), as with clients on other machines; with clients on
# the server's own CPUs every response would otherwise cost the server a
# preemption, which penalises servers whose threads go on working after a
# send (a thread pool's workers) more than servers whose threads block.
CLIENT_POLICIES = ("normal", "batch")


def client_prefix(policy: str) -> list[str]:
    if policy not in CLIENT_POLICIES:
        raise ValueError(f"client policy {policy!r}: one of {', '.join(CLIENT_POLICIES)}")
    return ["chrt", "--batch", "0"] if policy == "batch" else []


class Runner:
    windows_per_step = 1   # sysbench windows per plan step (audit runs one per policy)

    def __init__(self, plan: Plan, factory: ServerFactory, data_root: Path, out_dir: Path, base_port: int,
                 sysbench_bin: str = "sysbench", progress: Progress | None = None,
                 prepare_threads: int | None = None, client_policy: str = "normal",
                 client: ClientMachine | None = None):
        self.plan = plan
        self.factory = factory
        self.data_root = data_root
        self.out_dir = out_dir
        self.raw_dir = out_dir / "raw"
        self.base_port = base_port
        self.sysbench_bin = sysbench_bin
        self.client_prefix = client_prefix(client_policy)
        self.client = client
        self.progress = progress or Progress()
        self.prepare_threads = prepare_threads or max(1, min(os.cpu_count() or 2, 8))
        self.started = Started()
        self.results: list[PointResult] = []
        self._servers: dict[tuple[str, str], Server] = {}
        self._closing = False
        self.datasets_info: dict[str, dict] = {}
        self.sleep = time.sleep   # the tests replace it

    # -- servers

    def port_of(self, target: Target) -> int:
        return self.base_port + self.plan.targets.index(target)

    def server(self, target: Target, ds: Dataset) -> Server:
        key = (target.slug, ds.slug)
        if key not in self._servers:
            self._servers[key] = self.factory(target, ds, home_of(self.data_root, target, ds), self.port_of(target))
        return self._servers[key]

    def all_servers(self) -> list[Server]:
        return [self.server(t, ds) for ds in self.plan.datasets for t in self.plan.targets]

    def start(self, target: Target, ds: Dataset) -> Server:
        srv = self.server(target, ds)
        fresh = not marker_matches(srv.home, ds)
        if fresh:
            forget_dataset(srv.home, srv.datadir)
        self.started.add_server(srv)
        self.progress.status(f"starting {target.spec} on port {srv.port}"
                             + (" (new data directory)" if fresh else ""), force=True)
        self._start(srv)
        if fresh:
            self.prepare(target, ds, srv)
            # A fresh dataset leaves gigabytes of dirty pages and a full redo
            # log behind; the first point would measure their flushing (the
            # whitepaper run of 2026-11-23 lost 60% on the first write point
            # that way). A restart flushes them outside any measurement.
            self.progress.status(f"restarting {target.spec} to flush the prepared data", force=True)
            srv.stop()
            self._start(srv)
        info = read_marker(srv.home) or {}
        self.datasets_info[f"{target.spec} {ds.slug}"] = info
        if ds.fits_in_pool:
            self.prewarm(target, ds, srv)
        return srv

    def connection(self, srv: Server) -> sb.Connection:
        """Where sysbench reaches a server: loopback, or its address on a client machine's network."""
        return self.client.connection(srv.port) if self.client else sb.Connection("127.0.0.1", srv.port)

    def _start(self, srv: Server) -> None:
        try:
            srv.start()
        except BenchError:
            raise
        except Exception as e:  # ServerError, OSError, MissingBinary, ...
            raise BenchError(srv.describe_failure(e)) from None
        if self.client:
            try:
                for statement in self.client.account_sql():
                    srv.sql(statement)
            except Exception as e:
                raise BenchError(f"{srv.name}: cannot create the account of the client machine "
                                 f"{self.client.destination}: {e}") from None

    def stop(self, srv: Server) -> None:
        self.progress.status(f"stopping {srv.name}", force=True)
        srv.stop()

    def prepare(self, target: Target, ds: Dataset, srv: Server) -> None:
        t0 = time.monotonic()
        try:
            srv.sql("CREATE DATABASE IF NOT EXISTS sbtest")
        except Exception as e:
            raise BenchError(f"{target.spec}: cannot create database sbtest: {e}") from None
        conn = self.connection(srv)
        log = srv.home / "prepare.log"
        threads = min(self.prepare_threads, ds.tables)
        done = [0]

        def on_line(line: str) -> None:
            if line.startswith("Creating a secondary index"):
                done[0] += 1
                self.progress.status(f"preparing {target.spec} {ds.label}: {done[0]}/{ds.tables} tables, "
                                     f"{format_duration(time.monotonic() - t0)}")
        self.progress.say(f"preparing {ds.label} for {target.spec} (once; kept in {srv.home})")
        run = self.sysbench(sb.prepare_args(conn, ds.tables, ds.rows, threads), log, on_line,
                            deadline=time.monotonic() + 6 * 3600)
        if run.exit_code != 0:
            why = sb.fatal_summary(run.output) or f"exit code {run.exit_code}"
            raise BenchError(f"{target.spec}: sysbench prepare failed: {why} (log: {log})")
        size = dir_bytes(srv.datadir / "sbtest")
        write_marker(srv.home, ds, target, time.monotonic() - t0, size)
        self.progress.say(f"prepared {ds.label} for {target.spec} in {format_duration(time.monotonic() - t0)}, "
                          f"{size / (1 << 30):.2f} GiB on disk")

    def prewarm(self, target: Target, ds: Dataset, srv: Server) -> None:
        """Read every table once (sysbench's own prewarm) so a full-cache run starts cached."""
        conn = self.connection(srv)
        log = srv.home / "prewarm.log"
        self.progress.status(f"prewarming {target.spec} {ds.label}", force=True)
        run = self.sysbench(sb.prewarm_args(conn, ds.tables, ds.rows, min(self.prepare_threads, ds.tables)),
                            log, None, deadline=time.monotonic() + 3600)
        if run.exit_code != 0:
            why = sb.fatal_summary(run.output) or f"exit code {run.exit_code}"
            raise BenchError(f"{target.spec}: sysbench prewarm failed: {why} (log: {log})")

    # -- sysbench

    def sysbench(self, args: list[str], log: Path, on_line: Callable[[str], None] | None,
                 deadline: float) -> SysbenchRun:
        argv = self.client_prefix + [self.sysbench_bin] + args
        stdin = subprocess.DEVNULL
        if self.client:
            # The remote sysbench ends when our ssh's stdin closes (client_machine.remote_script),
            # so it gets a pipe that stays open as long as ssh runs.
            argv, stdin = self.client.command(argv, LUA_DIR), subprocess.PIPE
        return run_sysbench(argv, log, on_line, deadline, self.started, stdin)

    def wait_for_purge(self, srv: Server, label: str) -> int | None:
        """Let InnoDB purge the undo of earlier write points before measuring the next one.

        Without this the first points after a write-heavy one (or after a restart on data
        an earlier run updated) share the CPU with purge, and by different amounts on
        different targets. Waits until the history list is at most PURGE_DONE, or
        PURGE_WAIT seconds; returns the length when the point starts.
        """
        deadline = time.monotonic() + PURGE_WAIT
        while True:
            try:
                backlog = srv.purge_backlog()
            except Exception:
                return None
            if backlog is None or backlog <= PURGE_DONE or time.monotonic() >= deadline:
                return backlog
            self.progress.status(f"{label}: waiting for InnoDB purge, history list length {backlog:,}")
            self.sleep(1.0)

    def run_point(self, step: Step, srv: Server) -> PointResult:
        p = step.point
        total = len(self.plan.steps()) * self.windows_per_step
        ds_name = p.dataset.slug if p.dataset.kind == "fixed" else p.dataset.kind
        label = f"[{step.index + 1}/{total}] {step.target.spec} {p.scenario.name} {p.threads} thr {ds_name}"
        log = self.raw_dir / f"{step.index + 1:03d}-{p.dataset.slug}-{p.scenario.name}-{p.threads}-{step.target.slug}.txt"
        args = sb.run_args(p.scenario.script, p.scenario.option_dict(), self.connection(srv),
                           p.dataset.tables, p.dataset.rows, p.threads, self.plan.warmup, self.plan.seconds,
                           self.plan.sysbench_extra_for(p))
        result = PointResult(seq=step.index + 1, dataset=p.dataset.label, tables=p.dataset.tables,
                             rows=p.dataset.rows, scenario=p.scenario.name, threads=p.threads,
                             target=step.target.spec, status="failed",
                             started=time.strftime("%Y-%m-%dT%H:%M:%S"), seconds=self.plan.seconds,
                             warmup=self.plan.warmup, log=str(log))
        length = self.plan.warmup + self.plan.seconds
        eta_after = self.remaining_seconds(step.index + 1)

        def on_line(line: str) -> None:
            self.on_point_line(step, srv, line)
            iv = sb.parse_interval(line)
            if not iv:
                return
            phase = "warm-up" if iv.second <= self.plan.warmup else "measuring"
            left = max(0, length - iv.second) + eta_after
            self.progress.status(f"{label}: {iv.second}/{length}s {phase}  qps {iv.qps:,.0f}  "
                                 f"p{sb.MEASURED_PERCENTILE} {iv.lat_ms:.2f} ms  err/s {iv.err_per_s:.0f}  "
                                 f"| ~{format_duration(left)} left")
        result.purge_backlog = self.wait_for_purge(srv, label)
        self.progress.status(f"{label}: connecting", force=True)
        t0 = time.monotonic()
        # Deadline: sysbench stops itself at --time; allow for connecting every thread and
        # preparing its statements (oltp_common prepares each one for each table).
        stmts = p.threads * (p.scenario.stmts_per_table * p.dataset.tables + p.scenario.stmts_per_thread)
        run = self.sysbench(args, log, on_line, deadline=t0 + length + 120 + p.threads * 0.1 + stmts / 2000)
        result.exit_code = run.exit_code
        try:
            rep = sb.parse_report(run.output)
        except sb.ParseError as e:
            rep = None
            result.error = sb.fatal_summary(run.output) or str(e)
        if run.timed_out:
            result.error = f"sysbench did not finish within {format_duration(time.monotonic() - t0)}; killed"
        elif rep and run.exit_code == 0 and not rep.fatal and (self.plan.warmup == 0 or rep.checkpoints >= 1):
            result.status = "ok"
        elif rep and not result.error:
            result.error = (rep.fatal[-1] if rep.fatal else
                            f"sysbench exit code {run.exit_code}" if run.exit_code else
                            "no warm-up checkpoint report (warm-up longer than the run?)")
        if rep:
            result.tps, result.qps = rep.tps, rep.qps
            result.reads, result.writes, result.other = rep.reads, rep.writes, rep.other
            result.p95_ms, result.p99_ms = rep.p95_ms, rep.p99_ms
            result.avg_ms, result.max_ms = rep.lat_avg_ms, rep.lat_max_ms
            result.ignored_errors, result.reconnects = rep.ignored_errors, rep.reconnects
            for w in rep.warnings:
                self.progress.say(f"note: {label}: {w}")
        if result.status == "ok":
            errs = (result.ignored_errors or 0) + (result.reconnects or 0)
            self.progress.say(f"{label}: {result.qps:,.0f} qps  {result.tps:,.0f} tps  "
                              f"p95 {_ms(result.p95_ms)}  p99 {_ms(result.p99_ms)}  errors {errs}")
        else:
            self.progress.say(f"{label}: FAILED: {result.error} (log: {log})")
        return result

    def on_point_line(self, step: Step, srv: Server, line: str) -> None:
        """Every line sysbench prints during a point, for subclasses that watch the window
        (the cost subcommand snapshots /proc at the warm-up checkpoint and at the final report)."""

    def remaining_seconds(self, from_index: int) -> int:
        steps = self.plan.steps()[from_index:]
        per = self.plan.warmup + self.plan.seconds + self.plan.settle + 2
        switches = sum(1 for a, b in zip(steps, steps[1:]) if a.target != b.target or a.point.dataset != b.point.dataset)
        return len(steps) * per + switches * 10

    # -- the run

    def stop_leftovers(self) -> None:
        """mysqld left running by an earlier, killed run of this driver: stop it first."""
        for srv in self.all_servers():
            if srv.running() or srv.leftover_pids():
                self.progress.say(f"stopping a mysqld left running in {srv.home} by an earlier run")
                self.started.add_server(srv)
                self._stop_hard(srv)

    def run(self, csv: CsvLog, on_result: Callable[[PointResult], None] | None = None) -> list[PointResult]:
        steps = self.plan.steps()
        current: tuple[str, str] | None = None
        srv: Server | None = None
        for i, step in enumerate(steps):
            key = (step.target.slug, step.point.dataset.slug)
            if key != current or srv is None or not srv.running():
                if srv is not None:
                    self.stop(srv)
                srv = None
                srv = self.start(step.target, step.point.dataset)
                current = key
            result = self.run_point(step, srv)
            self.results.append(result)
            csv.add(result)
            if on_result:
                on_result(result)
            if result.status != "ok" and not srv.running():
                self.progress.say(f"{srv.name}: mysqld is no longer running; it will be restarted for the next point")
                srv = None
            if self.plan.settle and i + 1 < len(steps):
                self.progress.status(f"pause {self.plan.settle}s", force=False)
                self.sleep(self.plan.settle)
        if srv is not None:
            self.stop(srv)
        return self.results

    def _stop_hard(self, srv: Server) -> str:
        how = "not running"
        try:
            how = srv.stop()
        except Exception as e:  # keep cleaning up the others
            how = f"stop failed: {e}"
        for pid in srv.leftover_pids():
            try:
                os.kill(pid, signal.SIGKILL)
                how = f"killed pid {pid}"
            except ProcessLookupError:
                pass
        return how

    def close(self) -> list[str]:
        """Stop everything this run started: sysbench first, then servers, last first."""
        self._closing = True
        notes = []
        for proc in list(self.started.procs):
            kill_group(proc, grace=2.0)
            notes.append(f"sysbench pid {proc.pid} stopped")
        self.started.procs.clear()
        for srv in reversed(self.started.servers):
            if srv.running() or srv.leftover_pids():
                self.progress.status(f"stopping {srv.name} (mysqld)", force=True)
                notes.append(f"{srv.name}: {self._stop_hard(srv)}")
        return notes


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f} ms"


# ---------------------------------------------------------------- signals

class Signals:
    """SIGINT/SIGTERM/SIGHUP become Interrupted in the main thread; during clean-up
    they are noted and otherwise ignored."""

    CAUGHT = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self, progress: Progress):
        self.progress = progress
        self.cleaning = False
        self.received: list[int] = []
        self._old = {}

    def __enter__(self):
        for sig in self.CAUGHT:
            self._old[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)
        return False

    def _handler(self, signum, frame):
        self.received.append(signum)
        if self.cleaning:
            self.progress.say(f"({signal.Signals(signum).name}: still stopping what this run started; "
                              f"it takes a few seconds)")
            return
        raise Interrupted(signum)
