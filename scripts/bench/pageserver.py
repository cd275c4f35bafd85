"""strata-bench pageserver: pages read from a page server vs from the local files (issue 33).

    scripts/strata-bench pageserver --rounds 3 --report docs/benchmarks/pageserver-DATE.md

One cluster under the run folder: three log nodes holding the fork's redo,
mysqld with a --pool-mib buffer pool and a sysbench dataset several times
larger (--tables x --rows), and a pageserverd (InnoDB apply helper) seeded
with that dataset at a clean shutdown. Then, --rounds times, the two ways
of reading alternating (off then on, on then off, ...), each in a fresh
mysqld start with the same my.cnf but innodb_page_service:

  - off: pages come from the files, with innodb_flush_method=O_DIRECT so a
    miss is a disk read, not the operating system's cache;
  - on: pages come from the page server over loopback TCP.

Each start runs sysbench oltp_point_select and oltp_read_only at --threads
with uniformly random keys (most reads miss the buffer pool), a --warmup
run first (not measured), then --seconds measured. Per round
and point, the ratio on / off of transactions per second; the page gives
each ratio's mean with its 95% interval (stats.py) against --target-ratio
(0.7, issue 33), and the raw sysbench output.

GetPage latency: after the rounds, `pageserverctl bench` asks one page at a
time at random among the largest table's pages, one connection, for
--getpage-seconds, --rounds times: p50 and p99 with their intervals
against 150 us and 1000 us (issue 33's goals; Neon's pagebench mean is 0.22
ms, p99 0.75 ms).
"""
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from strata_tools import logservice, paths, ports
from strata_tools.mysqld import MysqldInstance
from strata_tools.pageserver import PageServer, flush_lsn, seed, space_files

from . import lock as bench_lock
from . import report as report_mod
from . import stats as st
from .runner import BenchError

WORKLOADS = ("oltp_point_select", "oltp_read_only")
GETPAGE_P50_US, GETPAGE_P99_US = 150, 1000


def say(message: str) -> None:
    print(f"pageserver-bench: {message}", flush=True)


def sysbench(m: MysqldInstance, args, script: str, step: list[str], out: Path | None = None) -> str:
    argv = ["sysbench", script, "--db-driver=mysql", f"--mysql-socket={m.socket}", "--mysql-user=root",
            "--mysql-db=sbtest", f"--tables={args.tables}", f"--table-size={args.rows}", *step]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=3600)
    if out is not None:
        out.write_text(" ".join(argv) + "\n" + r.stdout + r.stderr)
    if r.returncode != 0:
        raise BenchError(f"sysbench {script} {step[0]} failed: {(r.stdout + r.stderr)[-600:]}")
    return r.stdout


def tps(output: str) -> float:
    found = re.search(r"transactions:\s+\d+\s+\(([\d.]+) per sec\.\)", output)
    if not found:
        raise BenchError("no transaction rate in the sysbench output")
    return float(found.group(1))


def one_start(m: MysqldInstance, args, mode: str, rnd: int, raw: Path) -> dict[str, float]:
    m.options["innodb-page-service"] = mode
    m.write_config()
    m.start(timeout=300)
    try:
        result = {}
        for script in WORKLOADS:
            # Uniform keys: with the dataset several times the buffer pool,
            # most rows are misses (sysbench's default hot spot would hide them).
            common = ["run", f"--threads={args.threads}", "--rand-type=uniform"]
            sysbench(m, args, script, [*common, f"--time={args.warmup}"])
            out = sysbench(m, args, script, [*common, f"--time={args.seconds}"], raw / f"round{rnd}-{mode}-{script}.txt")
            result[script] = tps(out)
        status = {k: int(v) for k, v in (line.split("\t") for line in m.sql(
            "SHOW GLOBAL STATUS WHERE Variable_name IN ('Innodb_page_service_pages_read', "
            "'Innodb_page_service_read_us', 'Innodb_buffer_pool_reads')").splitlines())}
        result["misses"] = status.get("Innodb_buffer_pool_reads", 0)
        if mode == "on":
            result["pages_read"] = status.get("Innodb_page_service_pages_read", 0)
            result["read_us"] = status.get("Innodb_page_service_read_us", 0) / max(1, result["pages_read"])
        return result
    finally:
        m.stop()


def getpage(ps: PageServer, space: int, pages: int, lsn: int, seconds: int, raw: Path, rnd: int) -> dict[str, int]:
    r = ps.ctl("bench", f"--space={space}", f"--pages={pages}", f"--lsn={lsn}", f"--seconds={seconds}", "--clients=1")
    (raw / f"getpage-round{rnd}.txt").write_text(r.stdout + r.stderr)
    fields = dict(w.split("=", 1) for w in r.stdout.split() if "=" in w)
    if r.returncode != 0 or "p50_us" not in fields:
        raise BenchError(f"pageserverctl bench failed: {r.stdout.strip()} {r.stderr.strip()}")
    return {k: int(fields[k]) for k in ("requests", "mean_us", "p50_us", "p99_us", "max_us")}


def render(meta: dict, starts: list[dict], getpages: list[dict], goal: float) -> str:
    lines = ["# Pages from the page server vs from the files (issue 33)", ""]
    ratio_ivs = {}
    for script in WORKLOADS:
        ratios = []
        for rnd in range(1, meta["rounds"] + 1):
            by_mode = {s["mode"]: s for s in starts if s["round"] == rnd}
            if "on" in by_mode and "off" in by_mode:
                ratios.append(by_mode["on"][script] / by_mode["off"][script])
        ratio_ivs[script] = st.interval(ratios)
    p50 = st.interval([g["p50_us"] for g in getpages])
    p99 = st.interval([g["p99_us"] for g in getpages])
    for script in WORKLOADS:
        iv = ratio_ivs[script]
        lines.append(f"- **{script}**, {meta['threads']} threads, on / off: {iv.text()} — "
                     f"{st.verdict(iv, goal) or 'open'} (target ≥ {goal})")
    lines.append(f"- **GetPage p50** {p50.text('.0f', ' us')} — "
                 f"{st.verdict(p50, GETPAGE_P50_US, higher_is_better=False) or 'open'} (target ≤ {GETPAGE_P50_US} us); "
                 f"**p99** {p99.text('.0f', ' us')} — "
                 f"{st.verdict(p99, GETPAGE_P99_US, higher_is_better=False) or 'open'} (target ≤ {GETPAGE_P99_US} us)")
    lines += [f"- Reproduce: `{meta['command']}`",
              f"- Dataset {meta['tables']} x {meta['rows']:,} rows ({meta['data_mib']:.0f} MiB of tablespaces), "
              f"buffer pool {meta['pool_mib']} MiB; loopback; one 2-core machine for everything.", "",
              "## Per start", "",
              "| round | mode | " + " | ".join(f"{s} tps" for s in WORKLOADS) + " | buffer pool misses | "
              "page server reads | mean read (us) |",
              "| --- | --- | " + " | ".join("---:" for _ in WORKLOADS) + " | ---: | ---: | ---: |"]
    for s in starts:
        lines.append(f"| {s['round']} | {s['mode']} | " + " | ".join(f"{s[w]:.1f}" for w in WORKLOADS)
                     + f" | {s['misses']:,} | {s.get('pages_read', 0):,} | "
                     + (f"{s['read_us']:.0f}" if "read_us" in s else "—") + " |")
    lines += ["", "## GetPage (pageserverctl bench, one connection, random pages of the largest table)", "",
              "| round | requests | mean (us) | p50 (us) | p99 (us) | max (us) |", "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for i, g in enumerate(getpages, 1):
        lines.append(f"| {i} | {g['requests']:,} | {g['mean_us']} | {g['p50_us']} | {g['p99_us']} | {g['max_us']} |")
    lines += ["", f"Machine: {meta['uptime']}; load before {meta['load_before'][0]:.2f}, after "
              f"{meta['load_after'][0]:.2f}; {meta['elapsed'] / 60:.1f} minutes. Raw output: `RAW_DIR/`.", ""]
    return "\n".join(lines)


def run(args, argv: list[str]) -> int:
    if args.rounds < 1 or args.seconds < 1:
        raise BenchError("--rounds and --seconds must be at least 1")
    build = paths.server_build("fork")
    for tool in ("mysqld", "pageserverd", "pageserverctl"):
        if not paths.binary(build, tool).exists():
            raise BenchError(f"{tool} is not built in {build}: scripts/build-server fork")
    lock = bench_lock.hold(lambda msg: print(msg, flush=True), "strata-bench pageserver")  # noqa: F841
    date = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    out = Path(args.out) if args.out else paths.BUILD / "bench" / "results" / f"pageserver-{date}-{int(time.time())}"
    raw = out / "raw"
    shutil.rmtree(out / "cluster", ignore_errors=True)  # a run starts from an empty cluster
    raw.mkdir(parents=True, exist_ok=True)
    started, load_before = time.time(), os.getloadavg()
    avoid: set[int] = set()
    members = logservice.plan_nodes(build, out / "cluster", {}, avoid)
    nodes = [logservice.LogNode.of(mb) for mb in members]
    for node in nodes:
        node.start()
    options = logservice.mysqld_options(members)
    options.update({"innodb-buffer-pool-size": f"{args.pool_mib}M", "innodb-change-buffering": "none",
                    "innodb-flush-method": "O_DIRECT", "innodb-buffer-pool-load-at-startup": "OFF",
                    "innodb-buffer-pool-dump-at-shutdown": "OFF"})
    m = MysqldInstance(name="mysqld", build=build, home=out / "cluster" / "mysqld",
                       port=ports.free_port(args.port, avoid=avoid), options=options)
    ps = None
    starts: list[dict] = []
    getpages: list[dict] = []
    try:
        say(f"loading {args.tables} x {args.rows:,} rows")
        m.start(timeout=600)
        m.sql("CREATE DATABASE sbtest")
        sysbench(m, args, "oltp_read_only", ["prepare"], raw / "prepare.txt")
        m.stop()
        lsn = flush_lsn(m.datadir)
        ps = PageServer(build, out / "cluster" / "ps1", members, lsn)
        say(f"seeded the page server with {seed(ps, m.datadir, lsn):,} pages at LSN {lsn}")
        m.options["innodb-page-service-addresses"] = f"tcp://{ports.LOOPBACK}:{ps.port}"
        files = space_files(m.datadir)
        data_mib = sum(f.stat().st_size for f in files.values() if "sbtest" in str(f)) / 2**20
        for rnd in range(1, args.rounds + 1):
            for mode in ("off", "on") if rnd % 2 else ("on", "off"):
                result = one_start(m, args, mode, rnd, raw)
                starts.append({"round": rnd, "mode": mode, **result})
                say(f"round {rnd} {mode}: " + ", ".join(f"{w} {result[w]:.1f} tps" for w in WORKLOADS)
                    + (f"; {result['pages_read']:,} pages from the page server, {result['read_us']:.0f} us each"
                       if mode == "on" else ""))
        biggest = max((f for f in files.items() if "sbtest" in str(f[1])), key=lambda f: f[1].stat().st_size)
        end_lsn = ps.status().get("ingested_lsn", lsn)
        for rnd in range(1, args.rounds + 1):
            g = getpage(ps, biggest[0], biggest[1].stat().st_size // 16384, end_lsn, args.getpage_seconds, raw, rnd)
            getpages.append(g)
            say(f"GetPage round {rnd}: {g['requests']:,} requests, p50 {g['p50_us']} us, p99 {g['p99_us']} us")
    finally:
        if m.running():
            m.stop()
        if ps is not None:
            ps.stop()
        for node in nodes:
            node.stop()
    meta = {"command": "scripts/strata-bench " + " ".join(argv), "elapsed": time.time() - started,
            "load_before": load_before, "load_after": os.getloadavg(), "rounds": args.rounds,
            "threads": args.threads, "tables": args.tables, "rows": args.rows, "pool_mib": args.pool_mib,
            "data_mib": data_mib,
            "uptime": subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()}
    page = render(meta, starts, getpages, args.target_ratio)
    print(page)
    report_mod.publish(out, raw, page, {"meta": meta, "starts": starts, "getpage": getpages}, args.report, meta["command"])
    return 0


def main_args(sub) -> None:
    p = sub.add_parser("pageserver", help="sysbench with pages from the page server vs from the files, and "
                                          "GetPage p50/p99 (issue 33)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tables", type=int, default=4)
    p.add_argument("--rows", type=int, default=250000, help="rows per table (default 250,000: ~60 MiB each)")
    p.add_argument("--pool-mib", type=int, default=64, help="buffer pool (default 64 MiB)")
    p.add_argument("--threads", type=int, default=8)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--seconds", type=int, default=30)
    p.add_argument("--getpage-seconds", type=int, default=10)
    p.add_argument("--target-ratio", type=float, default=0.7, help="the least on / off may be (default 0.7)")
    p.add_argument("--port", type=int, default=13306)
    p.add_argument("--out", help="run folder (default .build/bench/results/pageserver-DATE-*)")
    p.add_argument("--report", help="also write the page there, raw data beside it in <name>-raw/")


if __name__ == "__main__":
    sys.exit("run through scripts/strata-bench pageserver")
