"""One mysqld instance run straight from a build directory.

An instance owns a home folder: my.cnf, data/, the error log, the socket and
the pid file. Used by the cluster CLI (the fork) and the benchmarks (the fork
and the stock twin side by side on different ports).

Initialisation goes to data.init/ and is renamed to data/ only when mysqld
--initialize succeeded, so a failed or interrupted initialisation never leaves
a data directory that a later start would take for a good one.
"""
import hashlib
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import paths, ports, procs


class ServerError(RuntimeError):
    pass


@dataclass
class MysqldInstance:
    name: str
    build: Path
    home: Path
    port: int
    options: dict[str, str] = field(default_factory=dict)

    @property
    def datadir(self) -> Path:
        return self.home / "data"

    @property
    def config(self) -> Path:
        return self.home / "my.cnf"

    @property
    def error_log(self) -> Path:
        return self.home / "mysqld.err"

    @property
    def socket(self) -> Path:
        # A Unix socket path has at most 107 bytes; a deep home (a long
        # benchmark target name) gets a short, stable one in /tmp instead.
        path = self.home / "mysqld.sock"
        if len(str(path)) <= 100:
            return path
        digest = hashlib.sha1(str(self.home.resolve()).encode()).hexdigest()[:16]
        return Path("/tmp") / f"strata-mysqld-{digest}.sock"

    @property
    def pid_file(self) -> Path:
        return self.home / "mysqld.pid"

    def mysqld(self) -> Path:
        return paths.binary(self.build, "mysqld")

    def client(self, name: str = "mysql") -> Path:
        return paths.binary(self.build, name)

    def write_config(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        (self.home / "tmp").mkdir(exist_ok=True)
        server = {
            "basedir": str(self.build),
            "datadir": str(self.datadir),
            "port": str(self.port),
            "bind-address": ports.LOOPBACK,
            "socket": str(self.socket),
            "pid-file": str(self.pid_file),
            "log-error": str(self.error_log),
            "plugin-dir": str(paths.plugin_dir(self.build)),
            "lc-messages-dir": str(self.build / "share"),
            "tmpdir": str(self.home / "tmp"),
            "secure-file-priv": str(self.home / "tmp"),
        }
        if os.geteuid() == 0:
            server["user"] = "root"  # mysqld refuses to run as root without it
        server.update(self.options)
        lines = [f"# Written by scripts/strata_tools/mysqld.py for instance {self.name!r}.", "[mysqld]"]
        lines += [k if v is None else f"{k} = {v}" for k, v in server.items()]
        lines += ["", "[client]", "host = 127.0.0.1", f"port = {self.port}", "user = root",
                  f"socket = {self.socket}", ""]
        self.config.write_text("\n".join(lines))

    def initialized(self) -> bool:
        return (self.datadir / "mysql.ibd").exists()

    def initialize(self, timeout: float = 600) -> None:
        """mysqld --initialize-insecure (root without password, loopback only)."""
        if self.initialized():
            return
        self.write_config()
        staging = self.home / "data.init"
        shutil.rmtree(staging, ignore_errors=True)
        argv = [str(self.mysqld()), f"--defaults-file={self.config}", "--initialize-insecure",
                f"--datadir={staging}"]
        try:
            subprocess.run(argv, check=True, timeout=timeout,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as e:
            shutil.rmtree(staging, ignore_errors=True)
            raise ServerError(f"{self.name}: mysqld --initialize failed ({e}); "
                              f"last lines of {self.error_log}:\n{procs.tail(self.error_log)}") from None
        shutil.rmtree(self.datadir, ignore_errors=True)
        staging.rename(self.datadir)

    def pid(self) -> int | None:
        pid = procs.read_pid(self.pid_file)
        return pid if procs.alive(pid, "mysqld") else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self, timeout: float = 120) -> None:
        if self.running():
            return
        if not ports.is_free(self.port):
            raise ServerError(f"{self.name}: port {self.port} on {ports.LOOPBACK} is in use by another program; "
                              f"choose another with --port")
        self.write_config()
        self.initialize()
        # Only this start's lines count: an earlier "ready for connections" must not.
        self._log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        proc = procs.spawn([str(self.mysqld()), f"--defaults-file={self.config}"], self.home / "mysqld.out")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise ServerError(f"{self.name}: mysqld exited with status {proc.returncode} while starting; "
                                  f"last lines of {self.error_log}:\n{procs.tail(self.error_log)}")
            if self.pid() and self._ready():
                return
            time.sleep(0.25)
        proc.kill()
        raise ServerError(f"{self.name}: mysqld did not become ready within {timeout:.0f}s; "
                          f"see {self.error_log}")

    def _ready(self) -> bool:
        if not ports.answers(self.port):
            return False
        try:
            with open(self.error_log, "rb") as log:
                log.seek(getattr(self, "_log_offset", 0))
                return b"ready for connections" in log.read()
        except OSError:
            return False

    def stop(self, grace_seconds: float = 120) -> str:
        pid = self.pid()
        if pid is None:
            return "not running"
        return procs.terminate(pid, grace_seconds, "mysqld")

    def sql(self, statement: str, timeout: float = 60) -> str:
        """Run one statement with the built mysql client; tab-separated rows."""
        out = subprocess.run(
            [str(self.client()), f"--defaults-file={self.config}", "-N", "-B", "-e", statement],
            capture_output=True, text=True, timeout=timeout)
        if out.returncode != 0:
            raise ServerError(f"{self.name}: {statement!r} failed: {out.stderr.strip()}")
        return out.stdout

    def connect_command(self) -> str:
        return f"{self.client()} -h127.0.0.1 -P{self.port} -uroot"
