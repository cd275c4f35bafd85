#!/usr/bin/env python3
"""Audit cost as a share of the machine's CPU cycles, under a sysbench load.

QPS ratios of audit on/off move by +-10% from one 5 s window to the next on a
shared 2 vCPU VM, so a 2% cost needs dozens of windows to resolve. A profile
does not: with the CPUs saturated (sysbench on the same machine), every cycle
the audit code takes is a cycle the queries do not get, so its share of all
samples is the throughput it costs. This runs a sysbench script against a
running server with the audit plugin loaded, sets audit_log_policy, records
`perf record -a -g` in the middle of the run and counts the samples:

  session   a sample whose call chain passes through the audit plugin
            (strata_audit.so) or the server's audit dispatch
            (mysql_audit_acquire_plugins, event_class_dispatch, audit_notify)
  writer    every sample of the plugin's writer thread (the thread whose
            samples show AuditLog::writer_main; its write() calls leave libc
            without frame pointers, so a chain alone would miss them)

Usage:
  scripts/bench/audit_cycles.py --port 13307 --threads 64 --script oltp_read_write \
      --policy ALL --policy NONE
See docs/benchmarks/audit-overhead.md (2026-11-26 02:00 section).
"""

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bench.tools import require  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
MYSQL = os.path.join(HERE, "..", "..", ".build", "fork", "build", "bin", "mysql")

DISPATCH_SYMBOLS = ("mysql_audit_acquire_plugins", "event_class_dispatch", "audit_notify")
WRITER_SYMBOL = "AuditLog::writer_main"


def sql(port, statement):
    subprocess.run([os.environ.get("MYSQL", MYSQL), "-uroot", "-h127.0.0.1", f"-P{port}", "-N", "-e", statement],
                   check=True)


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


def shares(perf_data):
    out = subprocess.run(["perf", "script", "-i", perf_data, "-F", "comm,tid,ip,sym,dso"],
                         check=True, capture_output=True, text=True).stdout
    return classify(parse_perf_script(out))


def run(args, policy, workdir):
    sql(args.port, f"SET GLOBAL audit_log_policy = {policy}")
    trx = ["--skip_trx=on"] if args.script in ("oltp_point_select", "oltp_read_only") else []
    sb_out = os.path.join(workdir, f"sysbench-{policy}.txt")
    with open(sb_out, "w") as out:
        sb = subprocess.Popen(
            ["sysbench", args.script, "--db-driver=mysql", "--mysql-host=127.0.0.1", f"--mysql-port={args.port}",
             "--mysql-user=root", "--mysql-db=sbtest", f"--tables={args.tables}", f"--table-size={args.rows}",
             f"--threads={args.threads}", f"--time={args.warmup + args.seconds + 5}", *trx, "run"],
            stdout=out, stderr=subprocess.STDOUT)
        time.sleep(args.warmup)
        perf_data = os.path.join(workdir, f"perf-{policy}.data")
        subprocess.run(["perf", "record", "-a", "-g", "-F", "499", "-o", perf_data, "--", "sleep", str(args.seconds)],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if sb.wait() != 0:
            sys.exit(f"sysbench failed, see {sb_out}")
    qps = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec", open(sb_out).read())
    c = shares(perf_data)
    busy = c["total"] - c["idle"]

    def pct(n):
        return 100.0 * n / c["total"]

    print(f"{args.script} threads={args.threads} policy={policy} qps={float(qps.group(1)) if qps else 0:.0f} "
          f"samples={c['total']} idle={pct(c['idle']):.1f}% audit_session={pct(c['session']):.2f}% "
          f"audit_writer={pct(c['writer']):.2f}% audit_total={pct(c['session'] + c['writer']):.2f}% "
          f"(of busy: {100.0 * (c['session'] + c['writer']) / max(busy, 1):.2f}%)", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--threads", type=int, default=64)
    p.add_argument("--script", default="oltp_read_write")
    p.add_argument("--policy", action="append", help="audit_log_policy values, one run each (default ALL, NONE)")
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seconds", type=int, default=15)
    p.add_argument("--tables", type=int, default=10)
    p.add_argument("--rows", type=int, default=25000)
    p.add_argument("--keep", help="directory to keep the perf data and sysbench output in")
    args = p.parse_args()
    require("perf", "sysbench")
    workdir = args.keep or tempfile.mkdtemp(prefix="audit-cycles-")
    os.makedirs(workdir, exist_ok=True)
    for policy in args.policy or ["ALL", "NONE"]:
        run(args, policy, workdir)
    if not args.keep:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
