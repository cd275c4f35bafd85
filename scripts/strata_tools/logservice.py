"""The log service's nodes (logserviced) of a local cluster, and the mysqld
options that put InnoDB's redo in them (docs/design/innodb-redo-to-logservice.md).

Three nodes on loopback, write quorum 2, one shared secret in a 0600 file in
the cluster directory. The MySQL build puts logserviced next to mysqld
(storage/innobase/strata/strata.cmake), so a node runs from the same build.
"""
import secrets
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from . import paths, ports, procs

NODES = 3
FIRST_PORT = 7100
CLUSTER_ID = "strata"


def secret_file(cluster_dir: Path) -> Path:
    """The cluster's shared secret, created once (mode 0600)."""
    path = cluster_dir / "logservice.secret"
    if not path.exists():
        cluster_dir.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_hex(24) + "\n")
        tmp.chmod(0o600)
        tmp.replace(path)
    return path


def plan_nodes(build: Path, cluster_dir: Path, old: dict, avoid: set[int]) -> list[dict]:
    """The node members; a restarted cluster keeps their ports."""
    members = []
    for number in range(1, NODES + 1):
        name = f"lognode{number}"
        port = old[name]["port"] if name in old else ports.free_port(FIRST_PORT + number - 1, avoid=avoid)
        avoid.add(port)
        members.append({"kind": "logserviced", "name": name, "flavor": "fork", "build": str(build),
                        "home": str(cluster_dir / name), "port": port,
                        "secret_file": str(secret_file(cluster_dir))})
    return members


def mysqld_options(nodes: list[dict]) -> dict:
    """What mysqld needs to keep its redo in these nodes."""
    return {"innodb-log-service-addresses": ",".join(f"tcp://{ports.LOOPBACK}:{n['port']}" for n in nodes),
            "innodb-log-service-secret-file": nodes[0]["secret_file"],
            "innodb-log-service-cluster-id": CLUSTER_ID}


def uses_log_service(options: dict) -> bool:
    return bool(options.get("innodb-log-service-addresses"))


@dataclass
class LogNode:
    name: str
    build: Path
    home: Path
    port: int
    secret_file: Path

    @classmethod
    def of(cls, member: dict) -> "LogNode":
        return cls(name=member["name"], build=Path(member["build"]), home=Path(member["home"]),
                   port=member["port"], secret_file=Path(member["secret_file"]))

    @property
    def error_log(self) -> Path:
        return self.home / "logserviced.log"

    @property
    def pid_file(self) -> Path:
        return self.home / "logserviced.pid"

    def initialized(self) -> bool:
        return (self.home / "data").is_dir()

    def holds_volume(self) -> bool:
        """Whether the node's data directory holds anything: redo, a checkpoint, its fencing state."""
        data = self.home / "data"
        return data.is_dir() and any(data.iterdir())

    def discard_volume(self) -> None:
        """Stop the node and empty its data directory.

        For a volume no mysqld data directory points at any more (an
        initialisation that failed, a primary data directory that is gone): a
        new --initialize cannot reuse it (the nodes keep one volume, and a
        writer cannot cut it back to LSN 0). These nodes are ours and have no
        admin endpoint (the MySQL build makes them without gRPC), so emptying
        their directories is the local form of `logservicectl drop-volume`.
        """
        self.stop()
        shutil.rmtree(self.home / "data", ignore_errors=True)

    def pid(self) -> int | None:
        pid = procs.read_pid(self.pid_file)
        return pid if procs.alive(pid, "logserviced") else None

    def running(self) -> bool:
        return self.pid() is not None

    def start(self, timeout: float = 30) -> None:
        if self.running():
            return
        if not ports.is_free(self.port):
            raise NodeError(f"{self.name}: port {self.port} on {ports.LOOPBACK} is in use by another program")
        (self.home / "data").mkdir(parents=True, exist_ok=True)
        port_file = self.home / "port"
        port_file.unlink(missing_ok=True)
        argv = [str(paths.binary(self.build, "logserviced")), f"--node_id={self.name}",
                f"--listen=tcp://{ports.LOOPBACK}:{self.port}", f"--data_dir={self.home / 'data'}",
                f"--cluster_id={CLUSTER_ID}", f"--secret_file={self.secret_file}", f"--port_file={port_file}"]
        proc = procs.spawn(argv, self.error_log)
        self.pid_file.write_text(f"{proc.pid}\n")
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise NodeError(f"{self.name}: logserviced exited with status {proc.returncode}; "
                                f"last lines of {self.error_log}:\n{procs.tail(self.error_log)}")
            if port_file.exists() and port_file.read_text().strip():
                return
            time.sleep(0.1)
        proc.kill()
        raise NodeError(f"{self.name}: logserviced did not listen within {timeout:.0f}s; see {self.error_log}")

    def stop(self, grace_seconds: float = 30) -> str:
        pid = self.pid()
        if pid is None:
            return "not running"
        return procs.terminate(pid, grace_seconds, "logserviced")


class NodeError(RuntimeError):
    pass
