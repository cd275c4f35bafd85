"""The machine's benchmark lock: one benchmark at a time, whatever the subcommand or checkout.

Two benchmarks on one machine share its CPUs and each measures the other,
so every strata-bench subcommand that starts a server takes this lock
first (flock on STRATA_BENCH_LOCK, default /tmp/strata-bench.lock) and
holds it until the process exits; a second one waits and says whom for.
The file names the holder (pid and checkout) for the one that waits.
"""
import fcntl
import os
from pathlib import Path
from typing import Callable

from strata_tools import paths


def lock_path() -> Path:
    return Path(os.environ.get("STRATA_BENCH_LOCK", "/tmp/strata-bench.lock"))


def hold(say: Callable[[str], None], what: str = "strata-bench"):
    """Blocks until this process holds the lock; returns the open file (the lock lives as long as it)."""
    path = lock_path()
    f = open(path, "a+")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.seek(0)
        holder = f.read().strip() or "another strata-bench"
        say(f"waiting for the benchmark that holds {path} ({holder}) to finish")
        fcntl.flock(f, fcntl.LOCK_EX)
    f.seek(0)
    f.truncate()
    f.write(f"pid {os.getpid()} in {paths.ROOT} ({what})\n")
    f.flush()
    return f
