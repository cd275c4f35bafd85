"""Starting and stopping the daemons of a local cluster.

Daemons run detached from the CLI (their own session), so `up` can return and
`stop` from another shell can find them again through their pid files.
"""
import os
import signal
import subprocess
import time
from pathlib import Path


def spawn(argv: list[str], log: Path, env: dict | None = None, cwd: Path | None = None) -> subprocess.Popen:
    log.parent.mkdir(parents=True, exist_ok=True)
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True, env=env, cwd=cwd)


def read_pid(pid_file: Path) -> int | None:
    try:
        return int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return None


def alive(pid: int | None, expect_in_cmdline: str | None = None) -> bool:
    """True if pid runs (and, if given, its command line mentions the text).

    The command-line check keeps a recycled pid from passing for our daemon.
    """
    if not pid:
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    state = _proc_state(pid)
    if state == "Z":
        return False
    return expect_in_cmdline is None or expect_in_cmdline.encode() in cmdline


def _proc_state(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return "?"


def terminate(pid: int, grace_seconds: float, expect_in_cmdline: str | None = None) -> str:
    """SIGTERM, then SIGKILL after the grace period. Returns how it ended."""
    if not alive(pid, expect_in_cmdline):
        return "not running"
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    while time.monotonic() < deadline:
        if not alive(pid, expect_in_cmdline):
            return "stopped"
        time.sleep(0.2)
    os.kill(pid, signal.SIGKILL)
    for _ in range(50):
        if not alive(pid, expect_in_cmdline):
            break
        time.sleep(0.1)
    return f"killed after {grace_seconds:.0f}s"


def tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return f"({path} is missing)"
