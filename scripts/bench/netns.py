"""strata-bench client-netns: a stand-in client machine for checking `--client-ssh` on one machine.

    scripts/strata-bench client-netns up     # prints the STRATA_BENCH_SSH and destination to use
    scripts/strata-bench client-netns down

A network namespace with its own address, reached over a veth pair, with an
sshd of its own in it. It shares this machine's CPUs and files, so it checks
the mechanics (addresses, account, ssh, clean-up), not the numbers. Root
only; needs ip, ssh-keygen and sshd (`scripts/setup --bench`). Nothing
outside DIR is touched: own host key, own authorized key, own ssh config.
Set-up runs in order and `down` undoes it in reverse; a failing step is
named with the command that failed. (Replaces the one-off netns_client.sh.)
"""
import os
import shutil
import subprocess
from pathlib import Path

from .runner import BenchError
from .tools import require

NS = "strata-client"
DIR = Path("/tmp/strata-netns")
HOST_IP, CLIENT_IP = "10.77.0.1", "10.77.0.2"
HOST_LINK, CLIENT_LINK = "strata-srv", "strata-cli"


def _run(argv: list[str], check: bool = True) -> None:
    out = subprocess.run(argv, capture_output=True, text=True)
    if check and out.returncode != 0:
        raise BenchError(f"`{' '.join(argv)}` failed: {(out.stderr or out.stdout).strip()[:300]}")


def up_commands(d: Path = DIR) -> list[list[str]]:
    """The set-up, in order (the tests check it against down_commands)."""
    netns = ["ip", "netns", "exec", NS]
    return [
        ["ip", "netns", "add", NS],
        ["ip", "link", "add", HOST_LINK, "type", "veth", "peer", "name", CLIENT_LINK],
        ["ip", "link", "set", CLIENT_LINK, "netns", NS],
        ["ip", "addr", "add", f"{HOST_IP}/30", "dev", HOST_LINK],
        ["ip", "link", "set", HOST_LINK, "up"],
        netns + ["ip", "addr", "add", f"{CLIENT_IP}/30", "dev", CLIENT_LINK],
        netns + ["ip", "link", "set", CLIENT_LINK, "up"],
        netns + ["ip", "link", "set", "lo", "up"],
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "host_key")],
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / "client_key")],
        netns + ["/usr/sbin/sshd", "-h", str(d / "host_key"), "-o", f"PidFile={d / 'sshd.pid'}",
                 "-o", f"AuthorizedKeysFile={d / 'authorized_keys'}", "-o", "PermitRootLogin=prohibit-password",
                 "-o", "StrictModes=no", "-o", f"ListenAddress={CLIENT_IP}"],
    ]


def down(d: Path = DIR) -> None:
    pid_file = d / "sshd.pid"
    if pid_file.exists():
        try:
            os.kill(int(pid_file.read_text().strip()), 15)
        except (ValueError, ProcessLookupError, PermissionError):
            pass
    _run(["ip", "netns", "del", NS], check=False)
    _run(["ip", "link", "del", HOST_LINK], check=False)
    shutil.rmtree(d, ignore_errors=True)


def ssh_config(d: Path) -> str:
    return (f"Host {CLIENT_IP}\n  User root\n  IdentityFile {d / 'client_key'}\n  IdentitiesOnly yes\n"
            f"  UserKnownHostsFile {d / 'known_hosts'}\n")


def up(d: Path = DIR) -> str:
    require("ip", "ssh-keygen", "sshd")
    if os.geteuid() != 0:
        raise BenchError("client-netns needs root (network namespaces and an sshd)")
    down(d)
    d.mkdir(mode=0o700, parents=True)
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)
    try:
        for argv in up_commands(d)[:10]:
            _run(argv)
        shutil.copyfile(d / "client_key.pub", d / "authorized_keys")
        _run(up_commands(d)[10])
    except BenchError:
        down(d)
        raise
    host_key = " ".join((d / "host_key.pub").read_text().split()[:2])
    (d / "known_hosts").write_text(f"{CLIENT_IP} {host_key}\n")
    (d / "ssh_config").write_text(ssh_config(d))
    return (f"export STRATA_BENCH_SSH='ssh -F {d / 'ssh_config'}'; destination: {CLIENT_IP} "
            f"(servers listen on {HOST_IP})")


def main_args(sub) -> None:
    p = sub.add_parser("client-netns", help="a stand-in client machine (network namespace + sshd) for "
                                            "checking --client-ssh here (replaces netns_client.sh)",
                       description=__doc__.split("\n\n")[0])
    p.add_argument("action", choices=("up", "down"))


def run(args) -> int:
    if args.action == "up":
        print(up())
    else:
        down()
    return 0
