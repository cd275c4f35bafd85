#!/usr/bin/env python3
"""Servers compared in short interleaved windows, all of them up at once.

On a shared VM the machine's speed drifts by 10-20% over minutes, so two
points measured a minute apart (strata-bench's A B, B A order) can differ by
more than what is compared. Here every server is started once, side by
side on its own dataset (my.cnf), and one sysbench run after another goes
to each in turn (A B C, C B A, ...); only the loaded one does work. Each
cycle gives one ratio per server against the first, measured within
seconds of each other, and the summary is over those ratios.

  scripts/bench/interleave.py --server fork=DATA/fork/10x25000/my.cnf \\
      --server pool=DATA/...strata_pool.../10x25000/my.cnf \\
      --script oltp_point_select --threads 128 --cycles 10

A server's my.cnf is used as strata-bench wrote it (its port included);
--mysqld-args LABEL="--opt=v ..." adds options to one server, --sysbench-args
to every run. Prints every
window, then per server the median QPS and the median, mean and standard
error of its per-cycle ratio to the first server. With --client-ssh
DESTINATION sysbench runs on that machine instead (client_machine.py).
"""

import argparse
import re
import resource
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench import client_machine as cm  # noqa: E402
from bench.scenarios import LUA_DIR  # noqa: E402
from bench.sysbench import Connection, base_args, fatal_summary, parse_interval  # noqa: E402
from bench.tools import require  # noqa: E402

HERE = Path(__file__).resolve().parent
BIN = HERE.parent.parent / ".build" / "fork" / "build" / "bin"


def port_of(cnf: Path) -> int:
    for line in cnf.read_text().splitlines():
        m = re.match(r"\s*port\s*=\s*(\d+)", line)
        if m:
            return int(m.group(1))
    sys.exit(f"{cnf}: no port = line")


def ping(port: int) -> bool:
    return subprocess.run([str(BIN / "mysqladmin"), "-uroot", "-h127.0.0.1", f"-P{port}", "ping"],
                          capture_output=True).returncode == 0


def mysql(port: int, statement: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(BIN / "mysql"), "-uroot", "-h127.0.0.1", f"-P{port}", "-e", statement],
                          capture_output=True, text=True)


def sysbench_args(script: str, conn: Connection, threads: int, seconds: int, tables: int, rows: int) -> list[str]:
    args = ["sysbench", *base_args(script, conn, tables, rows),
            f"--threads={threads}", f"--time={seconds}", "--report-interval=1"]
    if script == "oltp_point_select":
        args.append("--skip_trx=on")
    return args


def run_sysbench(argv: list[str], client: cm.ClientMachine | None) -> subprocess.CompletedProcess:
    if client:
        return client.run(argv, LUA_DIR)
    return subprocess.run(argv, capture_output=True, text=True)


def window_qps(output: str, warm: int, secs: int) -> float:
    """QPS over report seconds warm+1 .. warm+secs (sysbench's clock starts
    once every thread has connected)."""
    per_second = [iv.qps for iv in map(parse_interval, output.splitlines()) if iv is not None]
    window = per_second[warm:warm + secs]
    if len(window) < secs:
        raise RuntimeError(f"sysbench printed {len(per_second)} report lines, wanted {warm + secs}")
    return sum(window) / secs


def summary(labels: list[str], cycles: list[dict[str, float]]) -> str:
    base = labels[0]
    lines = [f"{'server':<12} {'median QPS':>11} {'ratio median':>13} {'ratio mean':>11} {'+-se':>6}"]
    for label in labels:
        qps = [c[label] for c in cycles]
        ratios = [c[label] / c[base] for c in cycles]
        se = statistics.stdev(ratios) / len(ratios) ** 0.5 if len(ratios) > 1 else 0.0
        lines.append(f"{label:<12} {statistics.median(qps):>11,.0f} {statistics.median(ratios):>13.3f} "
                     f"{statistics.fmean(ratios):>11.3f} {se:>6.3f}")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--server", action="append", required=True, metavar="LABEL=MY_CNF")
    ap.add_argument("--mysqld-args", action="append", default=[], metavar="LABEL=ARGS")
    ap.add_argument("--script", default="oltp_point_select")
    ap.add_argument("--threads", type=int, default=128)
    ap.add_argument("--cycles", type=int, default=10)
    ap.add_argument("--warm", type=int, default=3, help="report seconds skipped in each window")
    ap.add_argument("--secs", type=int, default=10, help="report seconds measured in each window")
    ap.add_argument("--sysbench-args", default="", help='e.g. "--db-ps-mode=disable" for 2,048 read-write threads')
    ap.add_argument("--tables", type=int, default=10)
    ap.add_argument("--rows", type=int, default=25000)
    ap.add_argument("--client-ssh", metavar="DESTINATION", help="run sysbench on that machine (ssh)")
    ap.add_argument("--listen", metavar="ADDRESS", help="with --client-ssh: the servers' address for it "
                    "(default: this machine's address on the ssh connection)")
    opts = ap.parse_args()
    if not opts.client_ssh:
        require("sysbench")
    client = None
    if opts.client_ssh:
        try:
            client = cm.open_machine(opts.client_ssh, opts.listen, LUA_DIR)
        except cm.ClientMachineError as e:
            sys.exit(str(e))

    def connection(port: int) -> Connection:
        return client.connection(port) if client else Connection("127.0.0.1", port)

    servers = {}
    for spec in opts.server:
        label, _, cnf = spec.partition("=")
        servers[label] = Path(cnf).resolve()
    extra = {}
    for spec in opts.mysqld_args:
        label, _, args = spec.partition("=")
        extra[label] = shlex.split(args)
    labels = list(servers)
    ports = {label: port_of(cnf) for label, cnf in servers.items()}
    if len(set(ports.values())) != len(ports):
        sys.exit(f"two servers share a port: {ports}")

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
    procs = {}
    try:
        for label, cnf in servers.items():
            listen = [f"--bind-address={client.bind_address()}"] if client else []
            procs[label] = subprocess.Popen([str(BIN / "mysqld"), f"--defaults-file={cnf}", *extra.get(label, []),
                                             *listen],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for label in labels:
            for _ in range(240):
                if ping(ports[label]):
                    break
                if procs[label].poll() is not None:
                    sys.exit(f"{label}: mysqld exited ({servers[label].parent / 'mysqld.err'})")
                time.sleep(0.5)
            else:
                sys.exit(f"{label}: mysqld did not answer on port {ports[label]}")
            for statement in client.account_sql() if client else []:
                made = mysql(ports[label], statement)
                if made.returncode != 0:
                    sys.exit(f"{label}: {statement}: {made.stderr.strip()}")
            prewarm = sysbench_args("oltp_read_write", connection(ports[label]), 2, 0, opts.tables, opts.rows)
            warmed = run_sysbench(prewarm + ["prewarm"], client)
            if warmed.returncode != 0:
                sys.exit(f"{label}: sysbench prewarm failed: {fatal_summary(warmed.stdout + warmed.stderr)}")
        print(f"{opts.script}, {opts.threads} threads, {opts.cycles} cycles of "
              f"{opts.secs} s windows (after {opts.warm} s), servers: {', '.join(labels)}", flush=True)
        # Report seconds sysbench may not print: under thousands of clients a
        # second can pass without its reporting thread getting the CPU.
        margin = 2 if opts.threads < 256 else 8
        cycles = []
        for i in range(opts.cycles):
            order = labels if i % 2 == 0 else labels[::-1]
            cycle = {}
            for label in order:
                run = run_sysbench(sysbench_args(opts.script, connection(ports[label]), opts.threads,
                                                 opts.warm + opts.secs + margin, opts.tables, opts.rows)
                                   + shlex.split(opts.sysbench_args) + ["run"], client)
                if run.returncode != 0:
                    sys.exit(f"{label}: sysbench failed: {fatal_summary(run.stdout + run.stderr) or run.stderr[-2000:]}")
                try:
                    cycle[label] = window_qps(run.stdout, opts.warm, opts.secs)
                except RuntimeError as e:
                    print(f"cycle {i + 1}: {label}: {e}; cycle left out", flush=True)
                    break
            if len(cycle) < len(labels):
                continue
            cycles.append(cycle)
            print(f"cycle {i + 1}: " + "  ".join(f"{label} {cycle[label]:,.0f}" for label in labels)
                  + "  | " + "  ".join(f"{label}/{labels[0]} {cycle[label] / cycle[labels[0]]:.3f}"
                                       for label in labels[1:]), flush=True)
        if not cycles:
            sys.exit("no complete cycle")
        print(summary(labels, cycles))
    finally:
        for label, proc in procs.items():
            subprocess.run([str(BIN / "mysqladmin"), "-uroot", "-h127.0.0.1", f"-P{ports[label]}", "shutdown"],
                           capture_output=True)
        for proc in procs.values():
            try:
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                proc.kill()


if __name__ == "__main__":
    main()
