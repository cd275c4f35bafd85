"""A local Strata cluster on loopback: one command from a fresh clone to a server.

    scripts/strata-cluster up       set-up, build (with progress), initialise, start
    scripts/strata-cluster status   what runs, on which ports, where the logs are
    scripts/strata-cluster stop     stop everything, last started first

A cluster is a list of members, each a daemon with its own folder under the
cluster directory (default .build/cluster, or --dir / STRATA_CLUSTER_DIR).
The list is saved in cluster.json so that status and stop, from any shell,
act on what up started. Members are started in order and stopped in reverse;
later features (log service nodes, audit) add members and options;
`up --replicas N` adds N replicas wired to the source with strong sync.
The fork's primary keeps its InnoDB redo in three log-service nodes
(logserviced, members lognode1..3, started first); `up --local-redo` keeps it
in local files instead. A primary that must be initialised (again) gets empty
nodes: redo they still hold belongs to no data directory, and mysqld
--initialize refuses such a volume.
"""
# scripts/strata-cluster (bash) makes sure python3 is installed, then runs this
# file; run as a file, it imports strata_tools from scripts/, not from here.
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from strata_tools import audit, logservice, paths, ports, thread_pool  # noqa: E402
from strata_tools.mysqld import MysqldInstance, ServerError  # noqa: E402

DEFAULT_DIR = Path(os.environ.get("STRATA_CLUSTER_DIR", paths.BUILD / "cluster"))
STATE_FILE = "cluster.json"


def say(message: str) -> None:
    print(f"strata-cluster: {message}", file=sys.stderr, flush=True)


def fail(message: str) -> NoReturn:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(1)


def run_step(argv: list[str], what: str, env: dict | None = None) -> None:
    say(what)
    if subprocess.run(argv, env=env).returncode != 0:
        fail(f"{what} failed (see the lines above)")


def load_state(cluster_dir: Path) -> dict:
    try:
        return json.loads((cluster_dir / STATE_FILE).read_text())
    except FileNotFoundError:
        return {"members": []}
    except (OSError, ValueError) as e:
        fail(f"{cluster_dir / STATE_FILE} is unreadable ({e}); stop the daemons by hand and remove it")


def save_state(cluster_dir: Path, state: dict) -> None:
    cluster_dir.mkdir(parents=True, exist_ok=True)
    tmp = cluster_dir / (STATE_FILE + ".tmp")
    tmp.write_text(json.dumps(state, indent=2) + "\n")
    tmp.replace(cluster_dir / STATE_FILE)


def instance_of(member: dict) -> MysqldInstance:
    if member["kind"] == "logserviced":
        return logservice.LogNode.of(member)
    if member["kind"] != "mysqld":
        fail(f"member {member['name']} has unknown kind {member['kind']!r}")
    return MysqldInstance(name=member["name"], build=Path(member["build"]), home=Path(member["home"]),
                          port=member["port"], options=member.get("options", {}))


# Strong sync (docs/design/strong-sync.md): with --replicas N the source
# commits only after N replicas hold a transaction in their relay log (policy
# block). GTID auto-positioning; the replicas connect as root over loopback.
SOURCE_SYNC_OPTIONS = {"server-id": "1", "log-bin": "binlog", "gtid-mode": "ON",
                       "enforce-gtid-consistency": "ON", "plugin-load-add": "strata_sync_source.so",
                       "loose-strata-sync-source-enabled": "ON"}


def replica_sync_options(number: int) -> dict:
    return {"server-id": str(1 + number), "log-bin": "binlog", "relay-log": "relay-bin",
            "gtid-mode": "ON", "enforce-gtid-consistency": "ON",
            "plugin-load-add": "strata_sync_replica.so", "loose-strata-sync-replica-enabled": "ON"}


def plan_members(args, cluster_dir: Path, previous: dict) -> list[dict]:
    """The members of this cluster; a restarted cluster keeps its ports."""
    old = {m["name"]: m for m in previous.get("members", [])}
    build = paths.server_build(args.flavor)
    if "mysqld" in old and args.port is None:
        port = old["mysqld"]["port"]
    elif args.port is not None:
        port = args.port
    else:
        port = ports.free_port(3306)
    replicas = args.replicas
    if replicas is None:  # a restarted cluster keeps its replicas
        replicas = sum(1 for name in old if name.startswith("replica"))
    members = [{"kind": "mysqld", "name": "mysqld", "flavor": args.flavor, "build": str(build),
                "home": str(cluster_dir / "mysqld"), "port": port,
                "options": dict(SOURCE_SYNC_OPTIONS, **{"loose-strata-sync-source-replicas": str(replicas)})
                if replicas else {}}]
    taken = {port}
    for number in range(1, replicas + 1):
        name = f"replica{number}"
        rport = old[name]["port"] if name in old else ports.free_port(port + number, avoid=taken)
        taken.add(rport)
        members.append({"kind": "mysqld", "name": name, "flavor": args.flavor, "build": str(build),
                        "home": str(cluster_dir / name), "port": rport, "source_port": port,
                        "options": replica_sync_options(number)})
    return members


def with_log_service(args, cluster_dir: Path, previous: dict, members: list[dict]) -> list[dict]:
    """Three log-service nodes ahead of the members, and the primary's redo in
    them. Not for the stock twin, not with --local-redo, and not for a data
    directory initialised with local redo (the fork cannot move it)."""
    old = {m["name"]: m for m in previous.get("members", [])}
    if args.flavor != "fork" or args.local_redo:
        return members
    primary = members[0]
    if "mysqld" in old and not logservice.uses_log_service(old["mysqld"].get("options", {})) \
            and instance_of(old["mysqld"]).initialized():
        say("mysqld keeps its local redo: its data directory was initialised with it")
        return members
    nodes = logservice.plan_nodes(Path(primary["build"]), cluster_dir, old, avoid={m["port"] for m in members})
    primary["options"] = dict(primary["options"], **logservice.mysqld_options(nodes))
    return nodes + members


def discard_orphaned_volume(members: list[dict]) -> None:
    """A primary about to be initialised needs empty log-service nodes: redo
    they still hold belongs to an initialisation that failed or to a data
    directory that is gone, and mysqld --initialize refuses such a volume."""
    nodes = [logservice.LogNode.of(m) for m in members if m["kind"] == "logserviced"]
    primary = next((m for m in members if m["name"] == "mysqld"), None)
    if not nodes or primary is None or instance_of(primary).initialized():
        return
    if any(node.holds_volume() for node in nodes):
        say("the log-service nodes hold redo of no data directory (an earlier initialisation of mysqld failed, "
            "or its data directory is gone); emptying them before initialising")
        for node in nodes:
            node.discard_volume()


def connect_replica(member: dict, inst: MysqldInstance) -> None:
    """First start of a replica: point it at the source and start replicating."""
    if inst.sql("SHOW REPLICA STATUS").strip():
        return
    say(f"{inst.name}: replicating from 127.0.0.1:{member['source_port']} with strong sync")
    inst.sql(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={member['source_port']}, "
             "SOURCE_USER='root', SOURCE_AUTO_POSITION=1, GET_SOURCE_PUBLIC_KEY=1; START REPLICA")


def cmd_up(args) -> int:
    cluster_dir = args.dir.resolve()
    if not args.no_setup:
        run_step([str(paths.SCRIPTS / "setup")], "installing what the project needs (scripts/setup)")
    if not args.no_build:
        env = dict(os.environ, STRATA_BUILD_PROGRESS="1")
        run_step([str(paths.SCRIPTS / "build-server"), args.flavor],
                 f"building the {args.flavor} server (the first build takes about an hour on 2 cores; "
                 f"later ones reuse ccache)", env=env)
    state = load_state(cluster_dir)
    members = plan_members(args, cluster_dir, state)
    # --audit[=POLICY]: the audit log plugin on the primary; a restart keeps it.
    policy = args.audit or next((audit.policy_of(m.get("options", {})) for m in state.get("members", [])
                                 if m["name"] == "mysqld"), None)
    members[0]["options"] = audit.with_audit(members[0]["options"], policy)
    # The fork's servers run on our thread pool (docs/thread_pool.md).
    for member in members:
        member["options"] = thread_pool.with_pool(member["options"], member["flavor"])
    members = with_log_service(args, cluster_dir, state, members)
    if args.port is not None and ports.answers(args.port) and not any(
            instance_of(m).running() for m in state.get("members", [])):
        fail(f"port {args.port} on 127.0.0.1 is in use by another program; choose another with --port")
    save_state(cluster_dir, {"members": members})
    discard_orphaned_volume(members)
    for member in members:
        inst = instance_of(member)
        if inst.running():
            say(f"{inst.name} runs already (pid {inst.pid()}, port {inst.port})")
            continue
        say(f"starting {inst.name} ({member['flavor']}) on 127.0.0.1:{inst.port}"
            + ("" if inst.initialized() else ", initialising its data directory first"))
        try:
            inst.start()
            if "source_port" in member:
                connect_replica(member, inst)
        except (ServerError, logservice.NodeError) as e:
            fail(str(e))
    print_summary(members)
    return 0


def print_summary(members: list[dict]) -> None:
    for member in members:
        inst = instance_of(member)
        print(f"{inst.name}: running on 127.0.0.1:{inst.port} (pid {inst.pid()})")
        if member["kind"] == "logserviced":
            print(f"  log:       {inst.error_log}")
            continue
        print(f"  connect:   {inst.connect_command()}")
        print(f"  error log: {inst.error_log}")
        print(f"  config:    {inst.config}")
    print("stop with: scripts/strata-cluster stop")


def cmd_status(args) -> int:
    state = load_state(args.dir.resolve())
    if not state["members"]:
        print("no cluster here (scripts/strata-cluster up starts one)")
        return 3
    up = 0
    for member in state["members"]:
        inst = instance_of(member)
        pid = inst.pid()
        if pid and ports.answers(inst.port):
            up += 1
            version = ""
            try:
                version = ("log service node" if member["kind"] == "logserviced"
                           else inst.sql("SELECT VERSION()").strip())
            except ServerError:
                version = "(not answering queries)"
            print(f"{inst.name:<10} up    pid {pid:<8} 127.0.0.1:{inst.port:<6} {version}  log {inst.error_log}")
        else:
            print(f"{inst.name:<10} down  {'':12} 127.0.0.1:{inst.port:<6} log {inst.error_log}")
    return 0 if up == len(state["members"]) else (3 if up == 0 else 1)


def cmd_stop(args) -> int:
    cluster_dir = args.dir.resolve()
    state = load_state(cluster_dir)
    for member in reversed(state["members"]):
        inst = instance_of(member)
        print(f"{inst.name}: {inst.stop()}")
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(prog="strata-cluster", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="cluster directory (default: %(default)s)")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="set up, build if needed, start the cluster")
    up.add_argument("--port", type=int, help="mysqld port (default: 3306 or the next free one)")
    up.add_argument("--flavor", choices=sorted(paths.SERVER_BUILDS), default="fork",
                    help="which server to run (default: fork)")
    up.add_argument("--replicas", type=int, metavar="N",
                    help="start N replicas wired with strong sync: the source's commits wait for all N "
                         "(default: as before, or 0)")
    up.add_argument("--local-redo", action="store_true",
                    help="keep the fork's InnoDB redo in local files instead of three log-service nodes")
    up.add_argument("--no-setup", action="store_true", help="skip scripts/setup")
    up.add_argument("--no-build", action="store_true", help="use the server as built")
    up.add_argument("--audit", nargs="?", const="ALL", choices=audit.POLICIES, metavar="POLICY",
                    help="load the audit log plugin (docs/audit_log.md) with this policy "
                         "(ALL, LOGINS, QUERIES, NONE; default ALL); the log is <datadir>/audit.log")
    sub.add_parser("status", help="show the members and whether they run")
    sub.add_parser("stop", help="stop every member")
    args = parser.parse_args()
    if args.command == "up" and args.port is not None and not 1 <= args.port <= 65535:
        fail(f"--port {args.port} is not a TCP port (1-65535)")
    if args.command == "up" and args.replicas is not None and not 0 <= args.replicas <= 8:
        fail(f"--replicas {args.replicas} is out of range (0-8)")
    return {"up": cmd_up, "status": cmd_status, "stop": cmd_stop}[args.command](args)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except paths.MissingBinary as e:
        fail(str(e))
    except KeyboardInterrupt:
        fail("interrupted")
