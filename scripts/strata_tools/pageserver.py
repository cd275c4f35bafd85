"""A page server (pageserverd with the InnoDB apply helper) for tests and
benchmarks, and what seeding it needs from an InnoDB data directory: which
tablespace files there are, their page size, the LSN of the clean shutdown
that wrote them.

    ps = PageServer(build, home, nodes, initial_lsn=flush_lsn(datadir))
    seed(ps, datadir, lsn)        # pageserverctl put-file per tablespace
    ps.ctl("get-file", ...); ps.status(); ps.stop()
"""
import struct
import subprocess
import time
from pathlib import Path

from . import logservice, paths, ports, procs

PAGE = 16384
FIL_PAGE_FILE_FLUSH_LSN = 26
FSP_HEADER = 38


def flush_lsn(datadir: Path) -> int:
    """Page 0:0's flush LSN: the LSN of the clean shutdown that wrote the files."""
    with open(datadir / "ibdata1", "rb") as fh:
        return struct.unpack(">Q", fh.read(FIL_PAGE_FILE_FLUSH_LSN + 8)[FIL_PAGE_FILE_FLUSH_LSN:])[0]


def space_files(datadir: Path) -> dict[int, Path]:
    """space id -> file, from page 0 of every tablespace that redo covers."""
    found = {}
    candidates = [datadir / "ibdata1", datadir / "mysql.ibd"]
    candidates += sorted(datadir.glob("undo_*")) + sorted(datadir.rglob("*.ibd"))
    for f in candidates:
        if not f.is_file() or f.name == "ibtmp1" or "#innodb_temp" in str(f):
            continue
        with open(f, "rb") as fh:
            head = fh.read(FSP_HEADER + 20)
        space = struct.unpack_from(">I", head, FSP_HEADER)[0]
        found[space] = f
    return found


def space_flags(f: Path) -> int:
    with open(f, "rb") as fh:
        head = fh.read(FSP_HEADER + 20)
    return struct.unpack_from(">I", head, FSP_HEADER + 16)[0]


def physical_size(flags: int) -> int:
    zip_ssize = (flags >> 1) & 0xF
    return PAGE if zip_ssize == 0 else (512 << zip_ssize)


class PageServer:
    def __init__(self, build: Path, home: Path, nodes: list[dict], initial_lsn: int):
        self.build, self.home = build, home
        self.secret = nodes[0]["secret_file"]
        self.port = ports.free_port(7300)
        home.mkdir(parents=True, exist_ok=True)
        argv = [str(paths.binary(build, "pageserverd")), "--name=ps1", f"--listen=tcp://{ports.LOOPBACK}:{self.port}",
                f"--data_dir={home / 'data'}", "--log_nodes=" + ",".join(f"tcp://{ports.LOOPBACK}:{n['port']}" for n in nodes),
                f"--cluster_id={logservice.CLUSTER_ID}", f"--secret_file={self.secret}", "--helper=innodb",
                f"--mysqld={paths.binary(build, 'mysqld')}", f"--initial_lsn={initial_lsn}",
                f"--port_file={home / 'port'}", "--freeze_interval_ms=500"]
        self.log = home / "pageserverd.log"
        self.proc = procs.spawn(argv, self.log)
        deadline = time.monotonic() + 30
        while not (home / "port").exists() or not (home / "port").read_text().strip():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"pageserverd did not start; see {self.log}:\n{procs.tail(self.log)}")
            time.sleep(0.1)

    def ctl(self, *args: str) -> subprocess.CompletedProcess:
        argv = [str(paths.binary(self.build, "pageserverctl")), args[0], f"--address=tcp://{ports.LOOPBACK}:{self.port}",
                f"--cluster_id={logservice.CLUSTER_ID}", f"--secret_file={self.secret}", *args[1:]]
        return subprocess.run(argv, capture_output=True, text=True, timeout=300)

    def status(self) -> dict[str, int]:
        out = self.ctl("status").stdout.split()
        return {k: int(v) for k, v in (w.split("=", 1) for w in out if "=" in w) if v.isdigit()}

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=60)


def seed(ps: PageServer, datadir: Path, lsn: int) -> int:
    """Every page of every tablespace of `datadir` into the page server as an
    image at `lsn` (the clean shutdown's). Returns the pages put."""
    seeded = 0
    for sid, f in space_files(datadir).items():
        r = ps.ctl("put-file", f"--file={f}", f"--space={sid}", f"--page_bytes={physical_size(space_flags(f))}",
                   f"--lsn={lsn}")
        if r.returncode != 0:
            raise RuntimeError(f"seeding {f.name}: {r.stdout.strip()} {r.stderr.strip()}")
        seeded += int(r.stdout.split("pages=")[1].split()[0])
    return seeded
