"""The real server of a target: strata_tools.mysqld.MysqldInstance, seen through runner.Server."""
import re
import subprocess
from pathlib import Path

from strata_tools import paths, procs
from strata_tools.mysqld import MysqldInstance

from .runner import pids_with_arg
from .scenarios import Dataset
from .targets import Target


class MissingServer(RuntimeError):
    pass


def build_of(flavor: str) -> Path:
    return paths.server_build(flavor)


def check_build(flavor: str) -> Path:
    """The build directory of a flavor with mysqld and the mysql client in it."""
    build = build_of(flavor)
    for program in ("mysqld", "mysql"):
        try:
            paths.binary(build, program)
        except paths.MissingBinary:
            raise MissingServer(f"target {flavor}: {program} is not built in {build}; build it with "
                                f"`scripts/build-server {flavor}` (or pass --build)") from None
    return build


def server_version(flavor: str) -> str:
    try:
        out = subprocess.run([str(paths.binary(build_of(flavor), "mysqld")), "--version"],
                             capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired, paths.MissingBinary):
        return "unknown"
    m = re.search(r"Ver\s+(.*)$", out)
    return m.group(1).strip() if m else out


class MysqldServer:
    def __init__(self, target: Target, ds: Dataset, home: Path, port: int, options: dict):
        opts = dict(options)
        opts.update(dict(target.overrides))
        self.target = target
        self.name = f"{target.spec} ({ds.slug})"
        self.home = home
        self.port = port
        self.instance = MysqldInstance(target.spec, build_of(target.flavor), home, port, opts)

    @property
    def datadir(self) -> Path:
        return self.instance.datadir

    def start(self) -> None:
        self.instance.start(timeout=600)

    def stop(self) -> str:
        # A clean shutdown flushes the dirty pages of a write run; SIGKILL only after 10 minutes.
        return self.instance.stop(grace_seconds=600)

    def running(self) -> bool:
        return self.instance.running()

    def sql(self, statement: str) -> str:
        return self.instance.sql(statement)

    def purge_backlog(self) -> int | None:
        out = self.instance.sql("SELECT count FROM information_schema.INNODB_METRICS "
                                "WHERE name = 'trx_rseg_history_len'").strip()
        return int(out) if out.isdigit() else None

    def leftover_pids(self) -> list[int]:
        # Ours for sure: mysqld started with this home's my.cnf (also mysqld --initialize).
        return pids_with_arg(f"--defaults-file={self.instance.config}")

    def describe_failure(self, error: Exception) -> str:
        """One line: what failed, the server's own first [ERROR] of this attempt, where the log is."""
        first = str(error).splitlines()[0] if str(error) else type(error).__name__
        first = re.sub(r";?\s*last lines of .*$", "", first)
        first = re.sub(r"\(Command '\[.*\]' returned non-zero exit status (\d+)\.\)", r"(exit status \1)", first)
        lines = procs.tail(self.instance.error_log, 200).splitlines()
        starts = [i for i, ln in enumerate(lines) if "starting as process" in ln]
        attempt = lines[starts[-1]:] if starts else lines
        errors = [ln for ln in attempt if "[ERROR]" in ln and "Aborting" not in ln and "unusable" not in ln]
        why = ""
        if errors:
            why = " " + re.sub(r"^.*?\[ERROR\]\s*(\[[^\]]*\]\s*)*", "", errors[0]).strip()
        return f"target {self.target.spec} did not start: {first.rstrip('.')}.{why} (log: {self.instance.error_log})"
