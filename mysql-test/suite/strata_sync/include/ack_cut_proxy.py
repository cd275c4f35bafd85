#!/usr/bin/env python3
"""A TCP proxy between a real replica and its source that can lose the
replica's acknowledgements, for strata_sync.lost_ack_reconnect. Python
standard library only.

It listens on 127.0.0.1 at a port the kernel picks and writes
"--let $proxy_port= N" to --port-inc (a mysqltest include). Each connection
it accepts is forwarded to --source-port, bytes passed as they are (TLS
too: nothing is parsed). Once --cut-file exists, what the replica sends
(its acks, during a dump) is dropped, while the source's events still reach
it: a replica that has a transaction whose acknowledgement the source
never gets. It exits when --stop-file exists. Progress lines go to stdout.
"""

import argparse
import os
import select
import socket
import sys


def log(msg):
    print(msg, flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--source-port", type=int, required=True)
    p.add_argument("--port-inc", required=True)
    p.add_argument("--cut-file", required=True)
    p.add_argument("--stop-file", required=True)
    args = p.parse_args()

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    tmp = args.port_inc + ".tmp"
    with open(tmp, "w") as f:
        f.write("--let $proxy_port= %d\n" % listener.getsockname()[1])
    os.rename(tmp, args.port_inc)  # the test never reads half a line

    peer = {}  # socket -> the socket its bytes go to
    replica_side = set()
    dropped_logged = False
    while not os.path.exists(args.stop_file):
        readable, _, _ = select.select([listener] + list(peer), [], [], 0.1)
        for s in readable:
            if s is listener:
                client, _ = listener.accept()
                upstream = socket.create_connection(
                    ("127.0.0.1", args.source_port))
                peer[client], peer[upstream] = upstream, client
                replica_side.add(client)
                log("replica connected")
                continue
            if s not in peer:
                continue  # closed with its peer in this round
            data = s.recv(65536)
            if not data:
                other = peer.pop(s)
                peer.pop(other, None)
                replica_side.discard(s)
                replica_side.discard(other)
                s.close()
                other.close()
                log("connection closed")
                continue
            if s in replica_side and os.path.exists(args.cut_file):
                if not dropped_logged:
                    dropped_logged = True
                    log("dropped what the replica sent after the cut")
                continue
            peer[s].sendall(data)
    log("proxy stopped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
