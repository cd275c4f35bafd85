"""strata-bench: sysbench scenarios on stock MySQL and the fork, side by side.

    scripts/strata-bench quick                      the quick preset, stock vs fork
    scripts/strata-bench run --preset whitepaper --report docs/benchmarks/whitepaper-DATE.md
    scripts/strata-bench run --scenario write,read-point --threads 16,64 --dataset full \\
        --target stock --target fork --target fork:thread_handling=pool-of-threads
    scripts/strata-bench plan --preset thousand-connections   what would run, how long
    scripts/strata-bench list                                 scenarios and presets
    scripts/strata-bench report .build/bench/results/<run>    rebuild table and plots
    scripts/strata-bench clean                                drop the prepared datasets
    scripts/strata-bench anatomy --threads 1,16,64 --rounds 3  one commit's latency by stage (issue 32)
    scripts/strata-bench recovery --redo-mib 1024 --rounds 3  restart time after kill -9 (issue 32)
    scripts/strata-bench pageserver --rounds 3            pages from the page server vs the files (issue 33)
    scripts/strata-bench interleave --target fork --target fork:thread_handling=pool-of-threads --rounds 10
                                  servers up side by side, short windows to each in turn
    scripts/strata-bench cost --scenario read-point --threads 16 --rounds 3    CPU and switches per query
    scripts/strata-bench audit --threads 16 --rounds 10 [--cycles]           audit ALL vs NONE at runtime
    scripts/strata-bench replication --time 30 --rounds 2     async vs semisync vs strong sync, one replica
    scripts/strata-bench client-netns up|down                 a stand-in client machine for --client-ssh

Every page gives the mean over rounds with a 95% interval (Student's t;
ratios per round) and says met / not met only for a --target-ratio that the
interval clears. Runs keep sysbench's raw output, points.csv and plots.

See docs/benchmarks/README.md. Bad input ends with one `error:` line and
exit status 1; an interrupted run stops what it started and exits with 130.
"""
import argparse
import os
import resource
import shlex
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import NoReturn

from strata_tools import paths, ports

from . import client_machine as cm
from . import report as rp
from . import lock as bench_lock
from . import stats as st
from .plan import Plan, format_duration, group_points
from .kind import Kind
from .runner import BenchError, Interrupted, Progress, Runner, Signals
from .scenarios import (LUA_DIR, PRESETS, SCENARIOS, PlanError, dataset, human_bytes, parse_size, preset,
                        scenario)
from .targets import open_files_needed, parse_targets, server_options, marker_matches, home_of

DATA_ROOT = paths.BUILD / "bench" / "data"
RESULTS_ROOT = paths.BUILD / "bench" / "results"
DEFAULT_PORT = 13306
DEFAULT_TARGETS = ["stock", "fork"]


class UsageError(Exception):
    pass


def fail(message: str, code: int = 1) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(code)


def _csv_list(values: list[str] | None) -> list[str]:
    out = []
    for v in values or []:
        out += [x.strip() for x in v.split(",") if x.strip()]
    return out


def _target_list(values: list[str] | None) -> list[str]:
    """--target values: repeatable, and each may list several targets with commas.
    A comma also separates a target's own options (`fork:a=1,b=2`), so a part
    that is only `name=value` belongs to the target before it."""
    out: list[str] = []
    for part in _csv_list(values):
        starts_target = "=" not in part or ":" in part.split("=", 1)[0]
        if out and not starts_target:
            out[-1] += "," + part
        else:
            out.append(part)
    return out


def _ints(values: list[str] | None, what: str) -> list[int]:
    out = []
    for x in _csv_list(values):
        try:
            n = int(x)
        except ValueError:
            raise PlanError(f"{what}: {x!r} is not a number") from None
        if n < 1:
            raise PlanError(f"{what}: {n} must be at least 1")
        out.append(n)
    return out


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def build_plan(args) -> tuple[Plan, str]:
    """The plan from the preset and the options that override it."""
    pr = preset(args.preset)
    ram = ram_bytes()
    if args.pool:
        pool = parse_size(args.pool, ram)
    else:
        pool = parse_size(pr.pool, ram)
        if pr.pool_cap:
            pool = min(pool, parse_size(pr.pool_cap, ram))
    pool = max(pool, 128 << 20)
    if pool > ram * 0.8:
        raise PlanError(f"buffer pool {human_bytes(pool)} is more than 80% of this machine's {human_bytes(ram)}")
    names = _csv_list(args.scenario)
    threads = _ints(args.threads, "--threads")
    if names:
        preset_threads = dict(pr.points)
        pts = []
        for name in names:
            sc = scenario(name)
            t = tuple(threads) or preset_threads.get(name)
            if not t:
                raise PlanError(f"scenario {name} is not in preset {pr.name}; give its concurrency with --threads")
            pts.append((sc, t))
    else:
        pts = [(scenario(n), tuple(threads) or t) for n, t in pr.points]
    datasets = [dataset(d, pool) for d in (_csv_list(args.dataset) or list(pr.datasets))]
    flavors = paths.SERVER_BUILDS
    targets = parse_targets(_target_list(args.target) if args.target else DEFAULT_TARGETS, flavors)
    plan = Plan(targets=targets, datasets=datasets, points=group_points(pts),
                seconds=args.time if args.time is not None else pr.seconds,
                warmup=args.warmup if args.warmup is not None else pr.warmup,
                settle=args.settle if args.settle is not None else (3 if pr.name != "quick" else 0),
                pool_bytes=pool, sysbench_extra=list(args.sb or []), rounds=args.rounds)
    plan.validate()
    custom = bool(names or threads or args.dataset)
    return plan, (f"{pr.name}-custom" if custom and args.preset != "quick" else "custom" if custom else pr.name)


def parse_sets(values: list[str] | None) -> dict:
    out = {}
    for item in values or []:
        key, eq, value = item.partition("=")
        if not key.strip():
            raise PlanError(f"--set {item!r}: use name=value")
        out[key.strip()] = value.strip() if eq else None
    return out


# ---------------------------------------------------------------- checks before anything starts

def check_sysbench(binary: str) -> str:
    path = shutil.which(binary)
    if not path:
        raise BenchError(f"{binary} is not installed; run scripts/setup (it installs Debian's sysbench 1.0.20)")
    return path


def open_client_machine(destination: str, listen: str | None, progress: Progress) -> cm.ClientMachine:
    """Probes the client machine, copies our lua scripts there; the servers will listen for it."""
    try:
        machine = cm.open_machine(destination, listen, LUA_DIR)
    except cm.ClientMachineError as e:
        raise BenchError(str(e)) from None
    progress.say(f"sysbench {machine.sysbench_version} runs on {destination} ({machine.client_address}); "
                 f"the servers listen on {machine.server_address} too, for {cm.BENCH_USER}@{machine.client_address}")
    return machine


def raise_open_files(need: int) -> str | None:
    """Raise RLIMIT_NOFILE (inherited by mysqld and sysbench) to at least `need`."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft >= need:
        return None
    try:
        new_hard = hard if hard == resource.RLIM_INFINITY or hard >= need else need
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, new_hard))
    except (ValueError, OSError):
        raise BenchError(f"this plan needs {need} open files but the limit is {hard} and cannot be raised "
                         f"here; run `ulimit -n {need}` as root first, or use fewer connections") from None
    return f"open files limit raised from {soft} to {need}"


def ensure_builds(flavors: list[str], build: bool, progress: Progress) -> None:
    from .servers import MissingServer, check_build
    for flavor in flavors:
        try:
            check_build(flavor)
            continue
        except MissingServer as e:
            if not build:
                raise BenchError(str(e)) from None
        progress.say(f"building the {flavor} server: scripts/build-server {flavor} (this takes long the first time)")
        env = dict(os.environ, STRATA_BUILD_PROGRESS="1")
        rc = subprocess.run([str(paths.SCRIPTS / "build-server"), flavor], env=env).returncode
        if rc != 0:
            raise BenchError(f"scripts/build-server {flavor} failed (exit {rc}); see its output above")
        check_build(flavor)


def check_ports(runner: Runner) -> None:
    runner.stop_leftovers()
    for t in runner.plan.targets:
        port = runner.port_of(t)
        if not ports.is_free(port):
            raise BenchError(f"port {port} (target {t.spec}) is in use by another program; "
                             f"choose another base port with --port")


# ---------------------------------------------------------------- commands

def cmd_list(_args) -> int:
    print("scenarios:")
    for sc in SCENARIOS.values():
        print(f"  {sc.name:<13} sysbench {sc.command_text():<50} {sc.summary}")
    print("\npresets:")
    for p in PRESETS.values():
        pts = ", ".join(f"{n} {'/'.join(map(str, t))}" for n, t in p.points)
        print(f"  {p.name:<21} {p.summary}\n  {'':<21} datasets {', '.join(p.datasets)}; {pts}; "
              f"{p.warmup}s warm-up + {p.seconds}s per point; pool {p.pool}"
              + (f" (at most {p.pool_cap})" if p.pool_cap else ""))
    print("\ndatasets: full (fits in the pool), big (~2x the pool), or TABLESxROWS")
    print(f"targets: stock, fork, or FLAVOR:opt=value,... (my.cnf overrides); default {' '.join(DEFAULT_TARGETS)}")
    return 0


def cmd_plan(args) -> int:
    plan, name = build_plan(args)
    prepared = {(t.slug, ds.slug) for t in plan.targets for ds in plan.datasets
                if marker_matches(home_of(Path(args.data_dir), t, ds), ds)}
    print(f"preset {name}:")
    for line in plan.describe():
        print("  " + line)
    needs = plan.needs()
    opts = server_options(plan.pool_bytes, needs, parse_sets(args.set))
    print("  server settings: " + ", ".join(k if v is None else f"{k}={v}" for k, v in opts.items()))
    missing = [f"{t.spec} {ds.slug}" for t in plan.targets for ds in plan.datasets
               if (t.slug, ds.slug) not in prepared]
    if missing:
        print(f"  to prepare first: {', '.join(missing)}")
    print(f"  {len(plan.steps())} measured points, about {format_duration(plan.estimate_seconds(prepared))}")
    return 0


def wait_for_other_benchmarks(progress: Progress, what: str = "strata-bench run"):
    """Holds the machine's benchmark lock (lock.py) until this process exits."""
    return bench_lock.hold(progress.say, what)


def cmd_run(args, argv: list[str], kind: Kind | None = None) -> int:
    kind = kind or Kind()
    progress = Progress()
    plan, name = build_plan(args)
    if kind.name != "run":
        name = f"{kind.name}-{name}"
    goals = st.parse_targets(args.target_ratio)
    lock = wait_for_other_benchmarks(progress, f"strata-bench {kind.name}")  # noqa: F841 (held until exit)
    client = open_client_machine(args.client_ssh, args.listen, progress) if args.client_ssh else None
    sysbench_bin = args.sysbench if client else check_sysbench(args.sysbench)
    needs = plan.needs()
    extra_opts = parse_sets(args.set)
    options = server_options(plan.pool_bytes, needs, extra_opts)
    if client:
        options["bind-address"] = client.bind_address()
    limit_note = raise_open_files(open_files_needed(needs))
    ensure_builds(sorted({t.flavor for t in plan.targets}, key=[t.flavor for t in plan.targets].index),
                  args.build, progress)

    from .servers import MysqldServer, server_version
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = Path(args.out) if args.out else RESULTS_ROOT / f"{stamp}-{name}"
    data_root = Path(args.data_dir)

    def factory(target, ds, home, port):
        return MysqldServer(target, ds, home, port, options)

    runner = kind.runner_class(plan, factory, data_root, out_dir, args.port, sysbench_bin, progress,
                               client_policy=getattr(args, "client_policy", "normal"), client=client)
    meta = base_meta(plan, name, argv, options, args, client)
    meta["setup"] = list(kind.setup) + meta["setup"]
    meta["target_ratios"] = [g.text() for g in goals]
    meta["servers"] = {t.spec: f"{server_version(t.flavor)} ({paths.server_build(t.flavor)})" for t in plan.targets}
    if limit_note:
        meta["notes"].append(limit_note)
    t0 = time.monotonic()
    status = 0
    csv = None
    signals = Signals(progress)
    with signals:
        try:
            check_ports(runner)
            out_dir.mkdir(parents=True, exist_ok=True)
            rp.save_meta(out_dir / "run.json", meta)
            csv = rp.CsvLog(out_dir / "points.csv")
            progress.say(f"strata-bench {name}: {len(plan.steps())} point(s) on "
                         f"{', '.join(t.spec for t in plan.targets)}, about "
                         f"{format_duration(plan.estimate_seconds(prepared_keys(plan, data_root)))}; "
                         f"results in {out_dir}")
            runner.run(csv)
        except Interrupted as e:
            status = 130
            progress.say(f"interrupted ({_signame(e.signum)}); stopping what this run started")
        except BenchError as e:
            status = 1
            progress.say(f"error: {e}")
        finally:
            signals.cleaning = True
            notes = runner.close()
            if csv:
                csv.close()
            for n in notes:
                progress.say(f"  {n}")
    if csv is None:
        return status
    if not rp.read_csv(out_dir / "points.csv"):
        shutil.rmtree(out_dir, ignore_errors=True)  # nothing measured: leave no empty results folder
        return status or 1
    meta["duration"] = format_duration(time.monotonic() - t0)
    meta["datasets"] = dataset_lines(plan, runner.datasets_info)
    if status == 130:
        meta["notes"].append("the run was interrupted; the table holds the points measured before that")
    meta["sections"] = kind.sections(runner, out_dir)
    meta["extra_plots"] = [p.name for p in kind.plots]
    rp.save_meta(out_dir / "run.json", meta)
    results = rp.read_csv(out_dir / "points.csv")
    if results:
        md, plots, warning = rp.write_page(results, meta, out_dir, Path(args.report) if args.report else None)
        print(rp.text_table(results, goals))
        print(f"\nresults: {md}" + "".join(f"\nplot:    {p}" for p in plots)
              + (f"\npage:    {args.report}" if args.report else ""))
        if warning:
            print(f"warning: plots skipped: {warning}", file=sys.stderr)
    failed = [r for r in results if r.status != "ok"]
    if status == 0 and failed:
        print(f"error: {len(failed)} of {len(results)} points failed; see the logs named above", file=sys.stderr)
        status = 1
    return status


def prepared_keys(plan: Plan, data_root: Path) -> set:
    return {(t.slug, ds.slug) for t in plan.targets for ds in plan.datasets
            if marker_matches(home_of(data_root, t, ds), ds)}


def _signame(signum: int) -> str:
    import signal
    return signal.Signals(signum).name


def base_meta(plan: Plan, name: str, argv: list[str], options: dict, args,
              client: cm.ClientMachine | None = None) -> dict:
    where = (f"sysbench 1.0.20 on a machine of its own ({client.destination}, {client.client_address}), "
             f"mysqld here, over TCP to {client.server_address}" if client else
             "sysbench 1.0.20 and mysqld on the same machine, over loopback TCP")
    return {
        "title": args.title or f"sysbench {name}: {' vs '.join(t.spec for t in plan.targets)}",
        "preset": name,
        "date": time.strftime("%Y-%m-%d %H:%M %Z"),
        "command": "scripts/strata-bench " + shlex.join(argv),
        "machine": rp.machine_facts() | {"host": socket.gethostname()},
        "git": git_describe(),
        "baseline": plan.targets[0].spec,
        "setup": [
            f"{where}; only one server runs at a time",
            "targets alternate point by point and the order flips every point (A B, B A, ...)",
            f"each point: {plan.warmup}s warm-up (sysbench --report-checkpoints) then {plan.seconds}s measured"
            + (f", {plan.settle}s pause between points" if plan.settle else ""),
            f"InnoDB buffer pool {human_bytes(plan.pool_bytes)}; sysbench default --rand-type (special)"
            + (f"; extra sysbench options: {' '.join(plan.sysbench_extra)}" if plan.sysbench_extra else ""),
            "full-cache datasets are read once after each server start (sysbench prewarm)",
        ] + (["sysbench's threads run under SCHED_BATCH (--client-policy batch): a client woken by a response "
              "does not preempt the server thread that sent it, as with clients on other machines"]
             if getattr(args, "client_policy", "normal") == "batch" else []),
        "server_options": options,
        "overrides": {t.spec: list(t.overrides) for t in plan.targets},
        "scenarios": {sc.name: (sc.command_text(), sc.summary) for sc, _ in dict.fromkeys(plan.points)},
        "datasets": dataset_lines(plan, {}),
        "notes": [f"{p.scenario.name} at {p.threads} threads on {p.dataset.label} ran with plain statements "
                  f"(--db-ps-mode=disable) on every target: sysbench 1.0.20 gives its threads a fixed 30 s to "
                  f"start, too short to prepare {p.threads:,} x {p.dataset.tables} tables' statements here"
                  for p in plan.unprepared_points()],
        "raw": "raw/ next to results.md",
    }


def dataset_lines(plan: Plan, info: dict) -> list[str]:
    out = []
    for ds in plan.datasets:
        line = (f"{ds.label}: {ds.tables} tables x {ds.rows:,} rows, ~{human_bytes(ds.est_bytes)} estimated, "
                f"pool {human_bytes(plan.pool_bytes)}")
        sizes = [f"{k.split(' ')[0]} {human_bytes(v['bytes_on_disk'])}" for k, v in info.items()
                 if k.endswith(" " + ds.slug) and v.get("bytes_on_disk")]
        if sizes:
            line += f"; on disk: {', '.join(sizes)}"
        out.append(line)
    return out


def git_describe() -> str:
    try:
        head = subprocess.run(["git", "-C", str(paths.ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(paths.ROOT), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f"commit {head}" + (" with uncommitted changes" if dirty else "") if head else ""


def cmd_report(args) -> int:
    run_dir = Path(args.run_dir)
    csv_path = run_dir / "points.csv"
    if not csv_path.exists():
        raise BenchError(f"{csv_path} does not exist; give the folder of a run (it holds points.csv)")
    results = rp.read_csv(csv_path)
    meta = rp.load_meta(run_dir / "run.json")
    if args.title:
        meta["title"] = args.title
    if args.target_ratio:
        meta["target_ratios"] = [g.text() for g in st.parse_targets(args.target_ratio)]
    goals = st.parse_targets(meta.get("target_ratios") or [])
    md, plots, warning = rp.write_page(results, meta, run_dir, Path(args.report) if args.report else None)
    print(rp.text_table(results, goals))
    print(f"\nresults: {md}" + "".join(f"\nplot:    {p}" for p in plots)
          + (f"\npage:    {args.report}" if args.report else ""))
    if warning:
        print(f"warning: plots skipped: {warning}", file=sys.stderr)
    return 0


def cmd_clean(args) -> int:
    root = Path(args.data_dir)
    if not root.exists():
        print(f"nothing to clean in {root}")
        return 0
    from .runner import pids_with_arg
    victims = [root / t for t in _csv_list(args.target)] if args.target else sorted(p for p in root.iterdir())
    for v in victims:
        if not v.exists():
            continue
        busy = [p for cnf in v.glob("*/my.cnf") for p in pids_with_arg(f"--defaults-file={cnf}")]
        if busy:
            raise BenchError(f"a mysqld (pid {busy[0]}) still runs from {v}; stop it first")
        shutil.rmtree(v)
        print(f"removed {v}")
    return 0


def target_ratio_arg(p) -> None:
    p.add_argument("--target-ratio", action="append", metavar="SCENARIO[@THREADS]=RATIO",
                   help="a target for the ratio over the first target, e.g. write=0.8 or read-point@16=0.97 "
                        "(* for every scenario; repeatable): the page says met / not met when the 95%% "
                        "interval over rounds clears it, open when it holds it")


def run_args(p) -> None:
    """Options of every subcommand that runs the plan: ports, results folder, page, sysbench, client."""
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"first loopback port (default {DEFAULT_PORT})")
    p.add_argument("--out", help=f"results folder (default {RESULTS_ROOT}/<time>-<preset>)")
    p.add_argument("--report", help="also write a results page there, e.g. docs/benchmarks/whitepaper-DATE.md")
    p.add_argument("--title", help="title of results.md / the report page")
    target_ratio_arg(p)
    p.add_argument("--build", action="store_true", help="build missing servers with scripts/build-server")
    p.add_argument("--sysbench", default="sysbench", help="the sysbench program")
    p.add_argument("--client-ssh", metavar="DESTINATION",
                   help="run sysbench on another machine, reached with `ssh DESTINATION` (key-based, sysbench "
                        "1.0.20 installed there); the servers then also listen on this machine's address as "
                        "that machine sees it, for the account strata_bench@<its address>")
    p.add_argument("--listen", metavar="ADDRESS",
                   help="with --client-ssh: the address the servers listen on for it, when the benchmark "
                        "network is not the one ssh uses")


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="scripts/strata-bench", description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="command", required=True)

    def plan_args(p):
        p.add_argument("--preset", default="quick", help=f"one of {', '.join(PRESETS)} (default quick)")
        p.add_argument("--scenario", action="append", help="scenarios, comma-separated (default: the preset's)")
        p.add_argument("--threads", action="append", help="concurrencies, comma-separated (default: the preset's)")
        p.add_argument("--dataset", action="append", help="full, big or TABLESxROWS, comma-separated")
        p.add_argument("--target", action="append",
                       help="stock, fork or FLAVOR:opt=value,...; repeat for more (default: stock and fork)")
        p.add_argument("--time", type=int, help="measured seconds per point")
        p.add_argument("--warmup", type=int, help="warm-up seconds per point")
        p.add_argument("--settle", type=int, help="pause between points, seconds")
        p.add_argument("--rounds", type=int, default=1,
                       help="run every point N times (alternating targets); the report shows the mean over "
                            "rounds with a 95%% interval (Student's t)")
        p.add_argument("--pool", help="InnoDB buffer pool: SIZE (3G) or PCT%% of RAM (default: the preset's)")
        p.add_argument("--set", action="append", metavar="OPT=VALUE", help="my.cnf setting for every target")
        p.add_argument("--client-policy", choices=("normal", "batch"), default="normal",
                       help="scheduling of sysbench's threads: normal (default), or batch (SCHED_BATCH: a client "
                            "woken by a response does not preempt the server, as with clients on other machines)")
        p.add_argument("--sb", action="append", metavar="ARG", help="extra sysbench argument, e.g. --sb=--rand-type=uniform")
        p.add_argument("--data-dir", default=str(DATA_ROOT), help=f"prepared datasets (default {DATA_ROOT})")

    p = sub.add_parser("run", help="run a preset or a custom plan")
    plan_args(p)
    run_args(p)

    p = sub.add_parser("plan", help="print what a run would do and how long it would take")
    plan_args(p)

    sub.add_parser("list", help="scenarios and presets")

    p = sub.add_parser("report", help="rebuild results.md and the plots of a run folder")
    p.add_argument("run_dir")
    p.add_argument("--report", help="also write a results page there")
    p.add_argument("--title")
    target_ratio_arg(p)

    from . import audit, commit_anatomy, cost, interleave, netns, pageserver, recovery, replication
    commit_anatomy.main_args(sub)
    recovery.main_args(sub)
    pageserver.main_args(sub)
    interleave.main_args(sub, plan_args, run_args)
    cost.main_args(sub, plan_args, run_args)
    audit.main_args(sub, plan_args, run_args)
    replication.main_args(sub)
    netns.main_args(sub)

    p = sub.add_parser("clean", help="remove prepared datasets")
    p.add_argument("--target", action="append", help="only these target folders (default: all)")
    p.add_argument("--data-dir", default=str(DATA_ROOT))
    return ap


# Defaults of the subcommands that measure one thing at one concurrency (the old scripts' defaults).
KIND_DEFAULTS = {"interleave": (["read-point"], ["128"]), "audit": (["read-point"], ["16"])}


def kind_of(args) -> Kind:
    """The Kind of a subcommand built on the plan runner, its defaults filled in `args`."""
    scenario, threads = KIND_DEFAULTS.get(args.command, (None, None))
    if scenario and not args.scenario:
        args.scenario = scenario
        args.threads = args.threads or threads
    if args.command == "interleave":
        from .interleave import Interleave
        return Interleave()
    if args.command == "cost":
        from .cost import CostKind
        if args.client_ssh:
            raise PlanError("cost reads sysbench's CPU from /proc here: run it without --client-ssh")
        if (args.warmup if args.warmup is not None else 1) < 1:
            raise PlanError("cost measures from sysbench's warm-up checkpoint: --warmup must be at least 1")
        return CostKind()
    from . import audit
    from .tools import require
    if args.cycles:
        require("perf")
    args.target = args.target or [audit.DEFAULT_TARGET]
    return audit.AuditKind(audit.parse_policies(args.policies), args.cycles, st.parse_targets(args.target_ratio))


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    import signal
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `strata-bench plan | head` ends quietly
    if argv and argv[0] in PRESETS:  # `strata-bench quick ...` = `strata-bench run --preset quick ...`
        argv = ["run", "--preset", argv[0]] + argv[1:]
    args = parser().parse_args(argv)
    try:
        if args.command == "list":
            return cmd_list(args)
        if args.command == "plan":
            return cmd_plan(args)
        if args.command == "run":
            return cmd_run(args, argv)
        if args.command == "report":
            return cmd_report(args)
        if args.command == "clean":
            return cmd_clean(args)
        if args.command == "anatomy":
            from . import commit_anatomy
            return commit_anatomy.run(args, argv)
        if args.command == "recovery":
            from . import recovery
            return recovery.run(args, argv)
        if args.command == "pageserver":
            from . import pageserver
            return pageserver.run(args, argv)
        if args.command in ("interleave", "cost", "audit"):
            return cmd_run(args, argv, kind_of(args))
        if args.command == "replication":
            from . import replication
            return replication.run(args, argv)
        if args.command == "client-netns":
            from . import netns
            return netns.run(args)
    except (PlanError, BenchError, st.TargetError) as e:
        fail(str(e))
    except (Interrupted, KeyboardInterrupt):
        fail("interrupted", 130)
    return 2
