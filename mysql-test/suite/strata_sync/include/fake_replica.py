#!/usr/bin/env python3
"""A strong-sync replica that says what a test tells it to, for the tests of
what the source believes (strata_sync.replica_claims,
strata_sync.gtid_claims). Python standard library only.

It speaks just enough of the MySQL protocol: a plain-TCP login as a user
without a password, a few SET statements, COM_BINLOG_DUMP (or
COM_BINLOG_DUMP_GTID with a GTID set: GTID auto-positioning), then it reads the
event packets (each with strong sync's 2-byte header) and sends acks in the
wire format of plugin/strata_sync/strata_sync_protocol.h: one packet with
sequence number 0, magic 0xA8, version 1, position (8 bytes, little endian),
file name.

Scenarios (--scenario):
  forge  One connection dumps from --file/--pos, acknowledges nothing it is
         sent, and sends one ack of --ack-file/--ack-pos (a position it was
         never sent). Then it waits for --stop-file.
  twice  Two connections with the same --uuid, the first with --server-id,
         the second with --second-server-id (default: the same). The first
         dumps from --file/--pos, acknowledges flagged events until it has
         acknowledged --target-pos, then stops reading (its dump thread
         soon blocks writing to it, so it does not notice the KILL the
         second connection's dump causes). The second dumps from the same
         place and acknowledges every flagged event. Then both wait for
         --stop-file.
  claim  One connection dumps with GTID auto-positioning, claiming --gtids
         (a set that takes in commits it was never sent), acknowledges
         nothing and waits for --stop-file.
  lost-ack
         A replica whose acknowledgement is lost with its connection. The
         first connection dumps with --gtids, reads until a flagged event,
         acknowledges nothing, creates --received-file and waits for
         --go-file; then it closes its socket without a word. The second
         connection dumps with --gtids plus the GTIDs the first one received
         (what a real receiver sends: what it has in its relay log),
         acknowledges every flagged event and waits for --stop-file.
Progress lines go to stdout; errors end the process with status 1.
"""

import argparse
import os
import socket
import struct
import sys
import time

CLIENT_LONG_PASSWORD = 0x1
CLIENT_PROTOCOL_41 = 0x200
CLIENT_TRANSACTIONS = 0x2000
CLIENT_SECURE_CONNECTION = 0x8000
CLIENT_PLUGIN_AUTH = 0x80000

COM_QUERY = 0x03
COM_BINLOG_DUMP = 0x12
COM_BINLOG_DUMP_GTID = 0x1E
BINLOG_THROUGH_GTID = 0x04
ROTATE_EVENT = 4
GTID_LOG_EVENT = 33
EVENT_MAGIC = 0xA7
FLAG_ACK_REQUESTED = 0x01
ACK_MAGIC = 0xA8
PROTOCOL_VERSION = 1


def log(msg):
    print(msg, flush=True)


class Connection:
    def __init__(self, port, user, checksum_bytes, rcvbuf=None):
        self.checksum_bytes = checksum_bytes
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        if rcvbuf:
            # Small before connect(), so that the window stays small: a
            # connection that stops reading blocks its dump thread soon.
            self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        self.sock.connect(("127.0.0.1", port))
        self.seq = 0
        self.buf = b""
        self.received = []  # (uuid, gno) of the GTID events read
        self.login(user)

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the source closed the connection")
            self.buf += chunk
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def read_packet(self):
        payload = b""
        while True:
            header = self.read_exact(4)
            length = header[0] | header[1] << 8 | header[2] << 16
            self.seq = (header[3] + 1) & 0xFF
            payload += self.read_exact(length)
            if length < 0xFFFFFF:
                return payload

    def write_packet(self, payload, seq=None):
        seq = self.seq if seq is None else seq
        self.sock.sendall(struct.pack("<I", len(payload))[:3] + bytes([seq]) +
                          payload)
        self.seq = (seq + 1) & 0xFF

    def login(self, user):
        greeting = self.read_packet()
        if greeting[0] != 10:
            raise RuntimeError("unexpected handshake version %d" % greeting[0])
        end = greeting.index(b"\0", 1)
        rest = greeting[end + 1:]
        # thread id (4), auth data 1 (8), filler, caps low (2), charset,
        # status (2), caps high (2), auth data length, reserved (10),
        # auth data 2, plugin name.
        pos = 4 + 8 + 1 + 2 + 1 + 2 + 2
        auth_len = rest[pos]
        pos += 1 + 10 + max(13, auth_len - 8)
        plugin = rest[pos:].split(b"\0", 1)[0]
        caps = (CLIENT_LONG_PASSWORD | CLIENT_PROTOCOL_41 |
                CLIENT_TRANSACTIONS | CLIENT_SECURE_CONNECTION |
                CLIENT_PLUGIN_AUTH)
        response = (struct.pack("<IIB", caps, 1 << 24, 255) + b"\0" * 23 +
                    user.encode() + b"\0" + b"\0" + plugin + b"\0")
        self.write_packet(response)
        while True:
            reply = self.read_packet()
            if reply[0] == 0x00:
                return
            if reply[0] == 0xFF:
                raise RuntimeError("login refused: %r" % reply[9:])
            if reply[0] == 0xFE:  # auth switch: an empty password
                self.write_packet(b"")
            # 0x01: more auth data (the fast path's result); an OK follows.

    def query(self, sql):
        self.seq = 0
        self.write_packet(bytes([COM_QUERY]) + sql.encode())
        reply = self.read_packet()
        if reply[0] == 0xFF:
            raise RuntimeError("%s: %r" % (sql, reply[9:]))
        if reply[0] != 0x00:
            raise RuntimeError("%s: a result set; expected OK" % sql)

    def start_dump(self, uuid, server_id, file, pos):
        self.query("SET @source_binlog_checksum = @@global.binlog_checksum, "
                   "@replica_uuid = '%s', @strata_sync_replica = %d" %
                   (uuid, PROTOCOL_VERSION))
        self.seq = 0
        self.write_packet(bytes([COM_BINLOG_DUMP]) +
                          struct.pack("<IHI", pos, 0, server_id) +
                          file.encode())
        self.file = file

    def start_gtid_dump(self, uuid, server_id, gtids):
        """COM_BINLOG_DUMP_GTID: no file name, position 4, the GTID set
        (a dict uuid -> sorted list of (first, last) intervals) in the
        untagged encoding: number of UUIDs, then per UUID its 16 bytes, the
        number of intervals and each as [first, last + 1)."""
        self.query("SET @source_binlog_checksum = @@global.binlog_checksum, "
                   "@replica_uuid = '%s', @strata_sync_replica = %d" %
                   (uuid, PROTOCOL_VERSION))
        data = struct.pack("<Q", len(gtids))
        for sid in sorted(gtids):
            data += bytes.fromhex(sid.replace("-", ""))
            data += struct.pack("<Q", len(gtids[sid]))
            for first, last in gtids[sid]:
                data += struct.pack("<QQ", first, last + 1)
        self.seq = 0
        self.write_packet(bytes([COM_BINLOG_DUMP_GTID]) +
                          struct.pack("<HII", BINLOG_THROUGH_GTID, server_id,
                                      0) +
                          struct.pack("<QI", 4, len(data)) + data)
        self.file = ""

    def next_event(self):
        """Returns (flagged, end position) of the next event packet."""
        packet = self.read_packet()
        if packet[0] == 0xFF:
            raise RuntimeError("the dump failed: %r" % packet[9:])
        if packet[0] != 0x00 or len(packet) < 3 + 19 or packet[1] != EVENT_MAGIC:
            raise RuntimeError("not a strong-sync event packet")
        flagged = (packet[2] & FLAG_ACK_REQUESTED) != 0
        event = packet[3:]
        event_type = event[4]
        log_pos = struct.unpack("<I", event[13:17])[0]
        if event_type == ROTATE_EVENT:
            # Position (8), the next file's name, the checksum if any.
            size = struct.unpack("<I", event[9:13])[0]
            self.file = event[19 + 8:size - self.checksum_bytes].decode()
        if event_type == GTID_LOG_EVENT:
            # Flags (1), UUID (16), GNO (8).
            sid = event[20:36].hex()
            sid = "-".join([sid[0:8], sid[8:12], sid[12:16], sid[16:20],
                            sid[20:32]])
            self.received.append((sid, struct.unpack("<q", event[36:44])[0]))
        return flagged, log_pos

    def ack(self, file, pos):
        payload = (bytes([ACK_MAGIC, PROTOCOL_VERSION]) +
                   struct.pack("<Q", pos) + file.encode())
        self.write_packet(payload, seq=0)


def wait_for(path, timeout):
    deadline = time.time() + timeout
    while not os.path.exists(path):
        if time.time() > deadline:
            raise RuntimeError("%s did not appear in %d s" % (path, timeout))
        time.sleep(0.05)


def forge(args):
    c = Connection(args.port, args.user, args.checksum_bytes)
    c.start_dump(args.uuid, args.server_id, args.file, args.pos)
    c.ack(args.ack_file, args.ack_pos)
    log("forged ack sent")
    wait_for(args.stop_file, args.timeout)


def twice(args):
    first = Connection(args.port, args.user, args.checksum_bytes, rcvbuf=4096)
    first.start_dump(args.uuid, args.server_id, args.file, args.pos)
    while True:
        flagged, pos = first.next_event()
        if flagged:
            first.ack(first.file, pos)
            if pos >= args.target_pos:
                break
    log("first connection acknowledged the target, stops reading")
    wait_for(args.go_file, args.timeout)
    second = Connection(args.port, args.user, args.checksum_bytes)
    second.start_dump(args.uuid, args.second_server_id or args.server_id,
                      args.file, args.pos)
    second.sock.settimeout(0.2)
    acked = 0
    while not os.path.exists(args.stop_file):
        try:
            flagged, pos = second.next_event()
        except socket.timeout:
            continue
        if flagged:
            second.ack(second.file, pos)
            acked = max(acked, pos)
    log("second connection acknowledged %s" %
        ("the target" if acked >= args.target_pos else "less than the target"))


def parse_gtids(text):
    """'uuid:1-5:7,uuid2:3' (as @@gtid_executed prints it, untagged) to a
    dict uuid -> list of (first, last)."""
    gtids = {}
    for part in text.replace("\n", "").split(","):
        part = part.strip()
        if not part:
            continue
        sid, *intervals = part.split(":")
        for iv in intervals:
            first, _, last = iv.partition("-")
            gtids.setdefault(sid.lower(), []).append(
                (int(first), int(last or first)))
    return gtids


def add_gtid(gtids, sid, gno):
    gtids.setdefault(sid, []).append((gno, gno))
    merged = []
    for first, last in sorted(gtids[sid]):
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(last, merged[-1][1]))
        else:
            merged.append((first, last))
    gtids[sid] = merged


def claim(args):
    c = Connection(args.port, args.user, args.checksum_bytes)
    c.start_gtid_dump(args.uuid, args.server_id, parse_gtids(args.gtids))
    log("dump requested with a GTID set")
    wait_for(args.stop_file, args.timeout)


def lost_ack(args):
    gtids = parse_gtids(args.gtids)
    first = Connection(args.port, args.user, args.checksum_bytes)
    first.start_gtid_dump(args.uuid, args.server_id, gtids)
    while not first.next_event()[0]:
        pass
    open(args.received_file, "w").close()
    log("first connection received a flagged event, acknowledges nothing")
    wait_for(args.go_file, args.timeout)
    first.sock.close()
    for sid, gno in first.received:
        add_gtid(gtids, sid, gno)
    second = Connection(args.port, args.user, args.checksum_bytes)
    second.start_gtid_dump(args.uuid, args.server_id, gtids)
    log("second connection claims %d received transaction(s)" %
        len(first.received))
    second.sock.settimeout(0.2)
    while not os.path.exists(args.stop_file):
        try:
            flagged, pos = second.next_event()
        except socket.timeout:
            continue
        if flagged:
            second.ack(second.file, pos)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenario", required=True,
                   choices=["forge", "twice", "claim", "lost-ack"])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--user", default="root")
    p.add_argument("--uuid", required=True)
    p.add_argument("--server-id", type=int, required=True)
    p.add_argument("--second-server-id", type=int)
    p.add_argument("--file")
    p.add_argument("--gtids", default="",
                   help="the GTID set to claim (GTID auto-positioning)")
    p.add_argument("--received-file")
    p.add_argument("--pos", type=int, default=4)
    p.add_argument("--ack-file")
    p.add_argument("--ack-pos", type=int)
    p.add_argument("--target-pos", type=int)
    p.add_argument("--go-file")
    p.add_argument("--stop-file", required=True)
    p.add_argument("--checksum-bytes", type=int, default=4,
                   help="4 with binlog_checksum = CRC32 (the default), else 0")
    p.add_argument("--timeout", type=int, default=120)
    args = p.parse_args()
    try:
        {"forge": forge, "twice": twice, "claim": claim,
         "lost-ack": lost_ack}[args.scenario](args)
    except Exception as e:  # reported to the test's log, then a failure
        log("fake_replica: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
