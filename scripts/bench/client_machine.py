"""sysbench on a machine of its own, reached with ssh.

With sysbench on the server's own CPUs, the clients' cost is part of every
measurement: at 2,048 connections sysbench alone takes 50-90 us of CPU per
point select on a 2-vCPU machine, and the woken client preempts the server
thread that answered it (docs/benchmarks/thread-pool-2026-11-23.md). A
thread pool's claim, thousands of connections served by a few threads, is
only measured cleanly with the clients elsewhere. This module is that
elsewhere:

- `probe` asks the client machine, over ssh, for its sysbench version and
  for the two addresses of the ssh connection ($SSH_CONNECTION): the
  address this machine has as the client sees it (the servers listen there
  besides loopback) and the client's own (the one host the benchmark
  account accepts).
- `install_scripts` copies our own lua scripts (scripts/bench/lua) into a
  folder on the client; `command` rewrites their paths in sysbench's
  arguments and wraps the run in ssh.
- The benchmark account, `strata_bench`@<client address>, has no password:
  sysbench 1.0.20 cannot do caching_sha2_password's full authentication
  without TLS, and TLS would make remote runs cost what local ones do not.
  It accepts that one host only, and the servers listen beyond loopback
  only while a remote run has them up.

A killed local ssh must not leave sysbench running over there and loading
the next point's server: the remote side runs sysbench in the background
and kills it when its standard input, the ssh channel, reaches end of file.
"""
import os
import re
import shlex
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

from .sysbench import Connection, version as sysbench_version

BENCH_USER = "strata_bench"
# $STRATA_BENCH_SSH replaces the program, e.g. "ssh -F my_config" or "ssh -p 2222".
SSH = (*shlex.split(os.environ.get("STRATA_BENCH_SSH", "ssh")),
       "-o", "BatchMode=yes", "-o", "ServerAliveInterval=15")
REMOTE_LUA_DIR = "/tmp/strata-bench-lua"
EXPECTED_SYSBENCH = "1.0.20"


class ClientMachineError(RuntimeError):
    pass


@dataclass(frozen=True)
class ClientMachine:
    destination: str        # what ssh is given: host or user@host
    server_address: str     # this machine, as the client reaches it
    client_address: str     # the client, as the servers see it
    sysbench_version: str
    ssh: tuple[str, ...] = SSH
    lua_dir: str = REMOTE_LUA_DIR

    def connection(self, port: int) -> Connection:
        return Connection(self.server_address, port, user=BENCH_USER)

    def bind_address(self) -> str:
        """mysqld's bind-address: loopback for our own clients, plus the client's way in."""
        return f"127.0.0.1,{self.server_address}"

    def account_sql(self) -> list[str]:
        user = f"'{BENCH_USER}'@'{self.client_address}'"
        return [f"CREATE USER IF NOT EXISTS {user}", f"GRANT ALL ON *.* TO {user}"]

    def command(self, argv: list[str], local_lua_dir: Path) -> list[str]:
        """The local command that runs `argv` (sysbench and its arguments) on the client."""
        local = str(local_lua_dir).rstrip("/") + "/"
        remote = [a.replace(local, self.lua_dir.rstrip("/") + "/") if local in a else a for a in argv]
        return [*self.ssh, self.destination, "--", remote_script(remote)]

    def run(self, argv: list[str], local_lua_dir: Path) -> subprocess.CompletedProcess:
        """Runs argv on the client to its end; stdout and stderr together in .stdout.

        Not subprocess.run(stdin=PIPE): communicate() closes stdin at once,
        which is how the remote side learns that we are gone.
        """
        with subprocess.Popen(self.command(argv, local_lua_dir), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, errors="replace") as proc:
            out = proc.stdout.read()
            proc.wait()
        return subprocess.CompletedProcess(proc.args, proc.returncode, out, "")


def remote_script(argv: list[str]) -> str:
    """A POSIX sh command: run argv, end it when our ssh goes away.

    The shell's stdin is the ssh channel; sysbench gets /dev/null. A watcher
    drains the channel with `cat` (the local side never writes) and kills
    sysbench at end of file, which comes when the local ssh exits. The
    channel is handed to the watcher as fd 3: a background job's stdin is
    /dev/null in a shell without job control. When sysbench ends by itself
    the shell stops the watcher, and the watcher its `cat`, so nothing holds
    the session open. The soft limit of open files is raised to the hard one
    first: 2,048 connections need more than a login session's 1,024.
    """
    run = shlex.join(argv)
    limit = 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; '
    watcher = ("(cat <&3 >/dev/null 2>&1 & c=$!; trap 'kill $c 2>/dev/null; exit 0' TERM; "
               "wait $c; kill $sb 2>/dev/null)")
    return (f"{limit}exec 3<&0; {run} </dev/null 3<&- & sb=$!; {watcher} & watch=$!; exec 3<&-; "
            f"wait $sb; rc=$?; kill $watch 2>/dev/null; wait $watch 2>/dev/null; exit $rc")


def parse_probe(destination: str, text: str, ssh: tuple[str, ...] = SSH) -> ClientMachine:
    """The probe's output: $SSH_CONNECTION on its first line, then sysbench --version."""
    lines = text.splitlines()
    fields = lines[0].split() if lines else []
    if len(fields) != 4:
        raise ClientMachineError(f"{destination}: $SSH_CONNECTION is {lines[0] if lines else ''!r}, "
                                 "not 'client port server port' (is the destination reached through ssh?)")
    ours, _, theirs, _ = fields
    found = sysbench_version("\n".join(lines[1:]))
    if not found:
        raise ClientMachineError(f"{destination}: sysbench is not installed there "
                                 f"(apt-get install sysbench; version {EXPECTED_SYSBENCH} expected)")
    if found != EXPECTED_SYSBENCH:
        raise ClientMachineError(f"{destination}: sysbench {found} there, {EXPECTED_SYSBENCH} expected "
                                 "(the report parser and the lua scripts are written against it)")
    return ClientMachine(destination, strip_zone(ours), strip_zone(theirs), found, ssh)


def strip_zone(address: str) -> str:
    """A link-local IPv6 address carries %interface, which a MySQL account host cannot."""
    return re.sub(r"%.*$", "", address)


def probe(destination: str, ssh: tuple[str, ...] = SSH, timeout: float = 60) -> ClientMachine:
    argv = [*ssh, destination, "--", 'echo "$SSH_CONNECTION"; sysbench --version 2>&1 || true']
    try:
        run = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise ClientMachineError(f"{ssh[0]} is not installed here; scripts/setup --bench installs it "
                                 "(openssh-client)") from None
    except (OSError, subprocess.TimeoutExpired) as e:
        raise ClientMachineError(f"{destination}: ssh did not answer: {e}") from None
    if run.returncode != 0:
        why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
        raise ClientMachineError(f"{destination}: ssh failed: {why} (the benchmark needs key-based ssh "
                                 "without a passphrase prompt: BatchMode)")
    return parse_probe(destination, run.stdout, ssh)


def open_machine(destination: str, listen: str | None, local_lua_dir: Path) -> ClientMachine:
    """Probes the client, makes `listen` (when given) the servers' address for it, copies our lua scripts."""
    machine = probe(destination)
    if listen:
        machine = replace(machine, server_address=listen)
    install_scripts(machine, local_lua_dir)
    return machine


def install_scripts(machine: ClientMachine, local_lua_dir: Path, timeout: float = 120) -> None:
    """Copies our lua scripts to machine.lua_dir (tar over the ssh channel; no scp or rsync needed)."""
    tar = subprocess.Popen(["tar", "-C", str(local_lua_dir), "-cf", "-", "."], stdout=subprocess.PIPE)
    target = shlex.quote(machine.lua_dir)
    try:
        run = subprocess.run([*machine.ssh, machine.destination, "--",
                              f"rm -rf {target} && mkdir -p {target} && tar -C {target} -xf -"],
                             stdin=tar.stdout, capture_output=True, text=True, timeout=timeout)
    finally:
        tar.stdout.close()
        tar.wait()
    if run.returncode != 0 or tar.returncode != 0:
        why = (run.stderr.strip().splitlines() or [f"exit status {run.returncode}"])[-1]
        raise ClientMachineError(f"{machine.destination}: copying the lua scripts to {machine.lua_dir} "
                                 f"failed: {why}")
