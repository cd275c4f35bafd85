#!/usr/bin/env python3
"""kill -9 of mysqld under load, many times, with the redo in three local
log-service nodes: does any commit a client saw acknowledged go missing?

    python3 scripts/tests/kill_trials.py [--trials 100] [--delete-storage-every 4]

One cluster (three logserviced nodes, write quorum 2, and the fork's mysqld)
lives under --dir (default .build/kill-trials), built from --build (default
the fork's build in this checkout). Each trial:

  1. starts mysqld (crash recovery reads the redo back from the nodes) and
     checks that every commit acknowledged in every earlier trial is there,
     byte for byte (the row's length encodes its id);
  2. runs --clients mysql clients, each committing autocommit INSERTs as fast
     as it can and echoing an id only after its INSERT returned, so the
     echoed ids are exactly the acknowledged commits;
  3. after a random 0.5-3 s, kill -9 of mysqld; in every --delete-storage-every
     -th trial also kill -9 of one node (chosen at random), its whole storage
     deleted, the node started again empty: durable means on a quorum, not on
     one node, and the emptied node must rebuild from its peers.

A last start checks the last trial. The closing line gives the trials, the
acknowledged commits and how many were lost; the exit status is 0 only when
none was lost and every start succeeded. Raw logs stay under --dir.
"""
import argparse
import fcntl
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from strata_tools import logservice, paths, ports, procs  # noqa: E402
from strata_tools.mysqld import MysqldInstance  # noqa: E402

ROW_BASE = 10_000_000  # ids of trial t, client c: t * ROW_BASE + c * ROW_BASE // 10 + i


def pad_length(row_id: int) -> int:
    # Lengths vary so commits end at every offset of a 512-byte redo block.
    return (row_id * 37) % 800


def say(message: str) -> None:
    print(f"kill-trials: {message}", flush=True)


def wait_port_free(port: int) -> None:
    # A killed process's connections linger (FIN_WAIT) for a moment and keep
    # its port from being bound again.
    deadline = time.monotonic() + 120
    while not ports.is_free(port) and time.monotonic() < deadline:
        time.sleep(0.2)


class Cluster:
    def __init__(self, build: Path, home: Path, innodb_options: dict):
        self.home = home
        avoid: set[int] = set()
        members = logservice.plan_nodes(build, home, {}, avoid)
        self.nodes = [logservice.LogNode.of(m) for m in members]
        options = logservice.mysqld_options(members)
        options.update(innodb_options)
        port = ports.free_port(13306, avoid=avoid)
        self.mysqld = MysqldInstance(name="mysqld", build=build, home=home / "mysqld", port=port, options=options)

    def start_nodes(self) -> None:
        for node in self.nodes:
            node.start()

    def kill_mysqld(self) -> None:
        pid = self.mysqld.pid()
        if pid is None:
            raise RuntimeError("mysqld is not running at the kill")
        os.kill(pid, signal.SIGKILL)
        for _ in range(200):
            if not procs.alive(pid):
                break
            time.sleep(0.05)
        else:
            raise RuntimeError(f"mysqld (pid {pid}) survived kill -9")
        wait_port_free(self.mysqld.port)

    def wipe_node(self, index: int) -> None:
        node = self.nodes[index]
        pid = node.pid()
        if pid is not None:
            os.kill(pid, signal.SIGKILL)
            for _ in range(200):
                if not procs.alive(pid):
                    break
                time.sleep(0.05)
        shutil.rmtree(node.home / "data")
        wait_port_free(node.port)
        node.start()

    def stop(self) -> None:
        self.mysqld.stop()
        for node in reversed(self.nodes):
            node.stop()

    def kill_all(self) -> None:
        """On the way out, whatever happened: nothing of ours keeps running."""
        for pid in [self.mysqld.pid()] + [node.pid() for node in self.nodes]:
            if pid is not None:
                os.kill(pid, signal.SIGKILL)


def start_load(cluster: Cluster, trial: int, clients: int, log_dir: Path) -> list[tuple[subprocess.Popen, Path]]:
    """Clients that commit as fast as they can; each echoes an id after its commit returned."""
    load = []
    for c in range(clients):
        first = trial * ROW_BASE + c * (ROW_BASE // 10)
        acked = log_dir / f"acked-{trial}-{c}.txt"
        script = (f"awk 'BEGIN {{ for (i = {first}; i < {first + ROW_BASE // 10}; i++) "
                  f"printf \"INSERT INTO test.t VALUES (%d, REPEAT(\\\"x\\\", %d)); SELECT %d;\\n\", "
                  f"i, (i * 37) % 800, i }}' | {cluster.mysqld.client()} --defaults-file={cluster.mysqld.config} "
                  f"-N -B -n test > {acked} 2>/dev/null")
        load.append((subprocess.Popen(["sh", "-c", script]), acked))
    return load


def acknowledged(load: list[tuple[subprocess.Popen, Path]]) -> list[int]:
    ids = []
    for proc, acked in load:
        proc.wait(timeout=60)
        for line in acked.read_text().splitlines():
            if line.strip().isdigit():
                ids.append(int(line))
    return ids


def missing(cluster: Cluster, ids: list[int]) -> list[int]:
    """The acknowledged ids not in the table, or there with the wrong bytes."""
    lost = []
    for start in range(0, len(ids), 2000):
        chunk = ids[start:start + 2000]
        rows = cluster.mysqld.sql(f"SELECT id, LENGTH(pad) FROM test.t WHERE id IN ({','.join(map(str, chunk))})",
                                  timeout=300)
        found = {}
        for line in rows.splitlines():
            row_id, length = line.split("\t")
            found[int(row_id)] = int(length)
        lost += [i for i in chunk if found.get(i) != pad_length(i)]
    return lost


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trials", type=int, default=100)
    ap.add_argument("--clients", type=int, default=4, help="concurrent committing clients (default 4)")
    ap.add_argument("--delete-storage-every", type=int, default=4, metavar="K",
                    help="in every K-th trial also delete one node's whole storage (0: never; default 4)")
    ap.add_argument("--seed", type=int, default=None, help="for the kill times and the node chosen")
    ap.add_argument("--build", type=Path, default=paths.BUILD / "fork" / "build")
    ap.add_argument("--dir", type=Path, default=paths.BUILD / "kill-trials")
    ap.add_argument("--flush-log-at-trx-commit", default="1", choices=["0", "1", "2"],
                    help="1 (default) or 2: both promise that an acknowledged commit survives a mysqld crash; "
                         "0 promises nothing, a control that shows this script sees losses")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    say(f"seed {seed}; reproduce with: python3 scripts/tests/kill_trials.py --trials {args.trials} "
        f"--clients {args.clients} --delete-storage-every {args.delete_storage_every} --seed {seed}"
        + (f" --flush-log-at-trx-commit {args.flush_log_at_trx_commit}" if args.flush_log_at_trx_commit != "1" else ""))

    # The binaries under test must not change under a run: hold the lock
    # scripts/build-server takes, so a build waits until the trials end.
    lock = open(args.build.parent / ".strata-build.lock", "a")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        say("waiting for a build of this server to finish")
        fcntl.flock(lock, fcntl.LOCK_EX)
    for pid_file in args.dir.glob("*/*.pid"):
        if procs.alive(procs.read_pid(pid_file)):
            say(f"{pid_file} names a running process: an earlier run is still going; stop it first")
            return 2
    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    log_dir = args.dir / "acked"
    log_dir.mkdir()
    cluster = Cluster(args.build, args.dir, {"innodb-flush-log-at-trx-commit": args.flush_log_at_trx_commit,
                                             "skip-log-bin": None, "innodb-buffer-pool-size": "256M"})
    try:
        return run_trials(args, cluster, rng, log_dir)
    finally:
        cluster.kill_all()


def run_trials(args, cluster: Cluster, rng: random.Random, log_dir: Path) -> int:
    cluster.start_nodes()
    cluster.mysqld.start(timeout=600)  # initialises the data directory (redo in the nodes) first
    cluster.mysqld.sql("CREATE DATABASE IF NOT EXISTS test")
    cluster.mysqld.sql("CREATE TABLE test.t (id BIGINT PRIMARY KEY, pad VARCHAR(800)) ENGINE=InnoDB")

    all_acked: list[int] = []
    lost_total: list[int] = []
    wiped = 0
    failed_start = None
    t0 = time.monotonic()
    for trial in range(1, args.trials + 1):
        load = start_load(cluster, trial, args.clients, log_dir)
        time.sleep(rng.uniform(0.5, 3.0))
        cluster.kill_mysqld()
        acked = acknowledged(load)
        all_acked += acked
        wipe = args.delete_storage_every > 0 and trial % args.delete_storage_every == 0
        note = ""
        if wipe:
            index = rng.randrange(len(cluster.nodes))
            cluster.wipe_node(index)
            wiped += 1
            note = f", {cluster.nodes[index].name}'s storage deleted"
        started = time.monotonic()
        try:
            cluster.mysqld.start(timeout=600)
        except Exception as e:  # the start failing is a result, not a crash of this script
            failed_start = f"trial {trial}: {e}"
            say(f"trial {trial}: mysqld did not start after the kill: {e}")
            break
        lost = missing(cluster, acked)
        lost_total += lost
        say(f"trial {trial}: {len(acked)} acknowledged, {len(lost)} lost{note}; "
            f"restart {time.monotonic() - started:.1f} s")
        if lost:
            say(f"trial {trial}: lost ids (first 10): {lost[:10]}")
    if failed_start is None:
        # Nothing lost in an earlier trial may go missing later either.
        lost_later = [i for i in missing(cluster, all_acked) if i not in set(lost_total)]
        if lost_later:
            say(f"{len(lost_later)} commits present after their own trial went missing later: {lost_later[:10]}")
            lost_total += lost_later
    done = trial if failed_start is None else trial - 1
    say(f"{done} trials ({wiped} with a node's storage deleted) in {time.monotonic() - t0:.0f} s: "
        f"{len(all_acked)} acknowledged commits, {len(lost_total)} lost"
        + (f"; STOPPED: {failed_start}" if failed_start else ""))
    return 0 if not lost_total and failed_start is None else 1


if __name__ == "__main__":
    sys.exit(main())
