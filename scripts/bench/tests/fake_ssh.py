#!/usr/bin/env python3
"""ssh as client_machine.py uses it, for the tests: `fake_ssh.py [-o OPT]... DESTINATION -- COMMAND`.

Runs COMMAND with sh here, as sshd would run it over there, with
$SSH_CONNECTION set ("client port server port": this machine is the client).
Destination "unreachable" fails the way ssh does (exit status 255).
"""
import os
import sys

CONNECTION = "10.1.2.3 51000 10.1.2.4 22"


def main() -> int:
    args = sys.argv[1:]
    while args and args[0] == "-o":
        args = args[2:]
    if len(args) < 3 or args[1] != "--":
        print(f"fake ssh: usage: [-o OPT]... DESTINATION -- COMMAND, got {sys.argv[1:]}", file=sys.stderr)
        return 255
    destination, command = args[0], " ".join(args[2:])
    if destination == "unreachable":
        print("ssh: connect to host unreachable port 22: No route to host", file=sys.stderr)
        return 255
    env = dict(os.environ, SSH_CONNECTION=os.environ.get("FAKE_SSH_CONNECTION", CONNECTION))
    os.execvpe("sh", ["sh", "-c", command], env)


if __name__ == "__main__":
    sys.exit(main())
