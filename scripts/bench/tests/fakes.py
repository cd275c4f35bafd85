"""Fakes for the runner tests: a server that is a sleeping process, sysbench as a script.

The fake server runs `python3 -c <sleep> --defaults-file=<home>/my.cnf`, so the
runner's clean-up finds it exactly as it finds a real mysqld: by its pid file
and by that argument.
"""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAKE_SYSBENCH = HERE / "fake_sysbench.py"
SCRIPTS = HERE.parents[1]
if str(SCRIPTS) not in sys.path:
    sys.path.insert(0, str(SCRIPTS))

from bench.runner import pids_with_arg  # noqa: E402


class FakeServer:
    fail_start = set()   # target specs whose start fails
    log: list = []       # (event, name) in order

    def __init__(self, target, ds, home, port, options=None):
        self.target = target
        self.name = f"{target.spec} ({ds.slug})"
        self.home = Path(home)
        self.port = port
        self.options = options or {}

    @property
    def datadir(self):
        return self.home / "data"

    @property
    def config(self):
        return self.home / "my.cnf"

    def _pid(self):
        try:
            pid = int((self.home / "fake.pid").read_text())
        except (OSError, ValueError):
            return None
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return None
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return None if state == "Z" else pid

    def start(self):
        FakeServer.log.append(("start", self.name))
        self.home.mkdir(parents=True, exist_ok=True)
        self.config.write_text("[mysqld]\n")
        if self.target.spec in FakeServer.fail_start:
            raise RuntimeError(f"{self.target.spec}: mysqld exited with status 1 while starting; "
                               f"last lines of {self.home}/mysqld.err:\nline1\nline2")
        self.datadir.mkdir(exist_ok=True)
        proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)",
                                 f"--defaults-file={self.config}"], start_new_session=True)
        (self.home / "fake.pid").write_text(str(proc.pid))
        self._proc = proc

    def stop(self):
        FakeServer.log.append(("stop", self.name))
        pid = self._pid()
        if pid is None:
            return "not running"
        os.kill(pid, signal.SIGTERM)
        for _ in range(100):
            if getattr(self, "_proc", None) is not None:
                self._proc.poll()
            if self._pid() is None:
                return "stopped"
            time.sleep(0.05)
        return "still running"

    def running(self):
        return self._pid() is not None

    def sql(self, statement):
        return ""

    backlog = [0]   # history list lengths purge_backlog() returns, one per call, the last repeats

    def purge_backlog(self):
        return FakeServer.backlog.pop(0) if len(FakeServer.backlog) > 1 else FakeServer.backlog[0]

    def leftover_pids(self):
        return pids_with_arg(f"--defaults-file={self.config}")

    def describe_failure(self, error):
        return f"target {self.target.spec} did not start: {str(error).splitlines()[0]}"
