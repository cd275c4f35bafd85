"""The page-apply helper against InnoDB itself: do pages rebuilt from redo by
`mysqld --strata-page-apply` equal the pages mysqld wrote?

    python3 scripts/tests/page_apply_check.py [--build DIR] [--dir DIR] [--rows N]

One mysqld of the fork, its redo in a dir:// volume that keeps every byte (a
`retain` pin at 0). The steps:

  1. --initialize, a first workload, a clean shutdown: the data directory is
     copied as the base (A), at the volume's checkpoint LSN_A;
  2. a second workload (inserts that split pages, updates in place and that
     move rows, deletes, a new table, a secondary index kept up by DML, a
     compressed table), a clean shutdown: the data directory is B, at LSN_B;
  3. the helper parses the redo LSN_A..LSN_B (PARSE, InnoDB's scanner) and
     rebuilds every page it names from A's copy (APPLY, InnoDB's recovery
     apply); each result must equal B's page byte for byte.

Also checked: a page that no record names is the same in A and B (else it
was written without redo), apart from page 0:0's flush LSN; every reply's
frame CRC; and that the helper runs under its seccomp filter (--seccomp=kill).
The closing line counts pages compared, equal, different and unlogged; the
exit status is 0 only when none differs. Files stay under --dir.
"""
import argparse
import shutil
import struct
import subprocess
import sys
import time
from pathlib import Path

if __name__ == "__main__":
    sys.path[0] = str(Path(__file__).resolve().parents[1])
from strata_tools import paths, ports  # noqa: E402
from strata_tools.mysqld import MysqldInstance  # noqa: E402
from strata_tools.pageserver import physical_size, space_files, space_flags  # noqa: E402

PAGE = 16384
BLOCK = 512
FIL_PAGE_LSN = 16
FIL_PAGE_FILE_FLUSH_LSN = 26
FSP_HEADER = 38
FRAME = struct.Struct("<IHHQII")
MAGIC = 0x48415053
HELLO, READY, SPACES, SPACES_OK, PARSE, PARSED, APPLY, APPLIED, ERROR = 1, 2, 3, 4, 5, 6, 7, 8, 99

_CRC_TABLE = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82F63B78 if _c & 1 else _c >> 1
    _CRC_TABLE.append(_c)


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    table = _CRC_TABLE
    for b in data:
        c = table[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def say(message: str) -> None:
    print(f"page-apply-check: {message}", flush=True)


class Reader:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v[0] if len(v) == 1 else v

    def blob(self, width: str = "I") -> bytes:
        n = self.take(width)
        v = self.data[self.pos:self.pos + n]
        self.pos += n
        return v


class Helper:
    """The page server's side of the pipe protocol (helper_protocol.h)."""

    def __init__(self, mysqld: Path, log: Path, seccomp: str = "kill"):
        self.log = open(log, "wb")
        self.proc = subprocess.Popen([str(mysqld), "--strata-page-apply", f"--seccomp={seccomp}"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log)
        self.request_id = 0

    def call(self, kind: int, payload: bytes) -> tuple[int, bytes]:
        self.request_id += 1
        self.proc.stdin.write(FRAME.pack(MAGIC, 1, kind, self.request_id, len(payload), crc32c(payload)) + payload)
        self.proc.stdin.flush()
        head = self.proc.stdout.read(FRAME.size)
        if len(head) < FRAME.size:
            raise RuntimeError(f"the helper died (exit {self.proc.wait()}); see {self.log.name}")
        magic, version, rtype, rid, length, crc = FRAME.unpack(head)
        body = self.proc.stdout.read(length)
        if magic != MAGIC or version != 1 or rid != self.request_id or crc32c(body) != crc:
            raise RuntimeError("a broken reply frame from the helper")
        if rtype == ERROR:
            raise RuntimeError("helper: " + Reader(body).blob("H").decode())
        if rtype != kind + 1:
            raise RuntimeError(f"reply type {rtype} to request {kind}")
        return rtype, body

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=30)
        self.log.close()


def read_page(f: Path | None, page: int, size: int) -> bytes | None:
    if f is None or not f.exists():
        return None
    with open(f, "rb") as fh:
        fh.seek(page * size)
        data = fh.read(size)
    return data if len(data) == size else None


def checkpoint_lsn(volume: Path) -> int:
    rec = (volume / "innodb" / "checkpoint").read_bytes()
    assert rec[:10] == b"STRATACKPT", "not a dir:// checkpoint record"
    return struct.unpack_from("<Q", rec, 12)[0]


def workload_one(m: MysqldInstance) -> None:
    m.sql("CREATE DATABASE pa; CREATE TABLE pa.t (id INT PRIMARY KEY, k INT, pad VARCHAR(600), KEY(k)) ENGINE=InnoDB;"
          "CREATE TABLE pa.z (id INT PRIMARY KEY, pad VARCHAR(900)) ROW_FORMAT=COMPRESSED KEY_BLOCK_SIZE=8;")
    rows = ",".join(f"({i},{i % 97},REPEAT('a',{100 + i % 400}))" for i in range(1, 2001))
    m.sql(f"INSERT INTO pa.t VALUES {rows}")
    m.sql("INSERT INTO pa.z SELECT id, REPEAT(CHAR(65 + id % 26), 300 + id % 500) FROM pa.t WHERE id <= 800")


def workload_two(m: MysqldInstance, rows: int) -> None:
    batch = []
    for i in range(2001, 2001 + rows):
        batch.append(f"({i},{i % 89},REPEAT('b',{50 + i % 550}))")
        if len(batch) == 500:
            m.sql("INSERT INTO pa.t VALUES " + ",".join(batch))
            batch = []
    if batch:
        m.sql("INSERT INTO pa.t VALUES " + ",".join(batch))
    m.sql("UPDATE pa.t SET k = k + 1 WHERE id % 7 = 0")
    m.sql("UPDATE pa.t SET pad = REPEAT('c', 580) WHERE id % 11 = 0")
    m.sql("DELETE FROM pa.t WHERE id % 13 = 0")
    m.sql("UPDATE pa.z SET pad = REPEAT('q', 700) WHERE id % 5 = 0; DELETE FROM pa.z WHERE id % 9 = 0")
    m.sql("CREATE TABLE pa.n (id INT PRIMARY KEY AUTO_INCREMENT, v VARCHAR(200)) ENGINE=InnoDB;"
          "INSERT INTO pa.n (v) SELECT REPEAT('n', 150) FROM pa.t LIMIT 1500")


SPACE_OPS = {1: "create", 2: "extend", 3: "delete", 4: "rename", 5: "size"}


def parse(helper: Helper, redo: Path, lsn_a: int, lsn_b: int) -> tuple[int, list, list]:
    start = lsn_a // BLOCK * BLOCK
    end = (lsn_b + BLOCK - 1) // BLOCK * BLOCK
    with open(redo, "rb") as fh:
        fh.seek(start)
        blocks = fh.read(end - start)
    _, body = helper.call(PARSE, struct.pack("<QQI", lsn_a, start, len(blocks)) + blocks)
    r = Reader(body)
    parsed_to, scanned_to, n = r.take("Q"), r.take("Q"), r.take("I")
    if scanned_to < end - BLOCK:
        raise RuntimeError(f"the helper's scan stopped at {scanned_to}, before the last block at {end - BLOCK}")
    records = []
    for _ in range(n):
        space, page, mtype, s, e = r.take("IIBQQ")
        records.append((space, page, mtype, s, e, r.blob()))
    ops = []
    for _ in range(r.take("I")):
        kind, space, flags, size = r.take("BIIQ")
        name = r.blob("H").decode()
        ops.append((SPACE_OPS.get(kind, kind), space, flags, size, name, r.take("Q")))
    return parsed_to, records, ops


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=paths.server_build("fork"))
    ap.add_argument("--dir", type=Path, default=paths.BUILD / "page-apply-check")
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--seccomp", default="kill", choices=["kill", "log", "off"],
                    help="the helper's filter (off: to debug a helper under strace or gdb)")
    ap.add_argument("--reuse", action="store_true", help="keep --dir's data and redo; only run the helper again")
    args = ap.parse_args()

    volume = args.dir / "volume"
    base = args.dir / "base"
    if not args.reuse:
        shutil.rmtree(args.dir, ignore_errors=True)
        prepare(args, volume, base)
    datadir = args.dir / "mysqld" / "data"
    lsn_a, lsn_b = [int(x) for x in (args.dir / "lsns").read_text().split()]
    return check(args, volume, base, datadir, lsn_a, lsn_b)


def prepare(args, volume: Path, base: Path) -> None:
    (volume / "innodb").mkdir(parents=True)  # the volume's own folder
    (volume / "innodb" / "retain").write_text("0\n")
    port = ports.free_port(13406)
    m = MysqldInstance(name="mysqld", build=args.build, home=args.dir / "mysqld", port=port,
                       options={"innodb-log-service-addresses": f"dir://{volume}",
                                "innodb-buffer-pool-size": "32M", "innodb-change-buffering": "none"})
    say("initialising")
    m.initialize()
    m.start()
    workload_one(m)
    m.stop()
    shutil.copytree(m.datadir, base)
    lsn_a = checkpoint_lsn(volume)
    m.start()
    t0 = time.monotonic()
    workload_two(m, args.rows)
    m.stop()
    lsn_b = checkpoint_lsn(volume)
    say(f"redo {lsn_a}..{lsn_b} ({(lsn_b - lsn_a) / 1e6:.1f} MB) from the second workload ({time.monotonic() - t0:.1f} s)")
    (args.dir / "lsns").write_text(f"{lsn_a} {lsn_b}\n")


def check(args, volume: Path, base: Path, datadir: Path, lsn_a: int, lsn_b: int) -> int:
    files_a, files_b = space_files(base), space_files(datadir)
    helper = Helper(paths.binary(args.build, "mysqld"), args.dir / "helper.log", args.seccomp)
    helper.call(HELLO, struct.pack("<I", PAGE))
    spaces = b"".join(struct.pack("<III", sid, space_flags(f), f.stat().st_size // physical_size(space_flags(f)))
                      for sid, f in files_b.items())
    helper.call(SPACES, struct.pack("<I", len(files_b)) + spaces)
    parsed_to, records, ops = parse(helper, volume / "innodb" / "redo.blocks", lsn_a, lsn_b)
    say(f"parsed to {parsed_to} (of {lsn_b}): {len(records)} records, {len(ops)} tablespace operations")
    failures = check_space_ops(ops, files_b, lsn_a, lsn_b)
    if parsed_to < lsn_b - BLOCK:
        say("FAIL: the parse stopped short of the redo's end")
        return 1

    by_page: dict[tuple[int, int], list] = {}
    types: dict[int, int] = {}
    for space, page, mtype, s, e, b in records:
        by_page.setdefault((space, page), []).append((mtype, s, e, b))
        types[mtype] = types.get(mtype, 0) + 1
    unknown = [sp for sp, _ in by_page if sp not in files_b]
    if unknown:
        say(f"records for {len(set(unknown))} tablespace(s) without a file in B (dropped or temporary): skipped")

    equal = different = lsn_drift = 0
    pages = sorted(p for p in by_page if p[0] in files_b)
    # The first batch goes twice: a helper that applied a page once must
    # apply it again the same way (nothing of the first request may stay).
    batches = [pages[i:i + 64] for i in range(0, len(pages), 64)]
    first_images: dict[tuple[int, int], bytes] = {}
    for n, batch in enumerate(batches[:1] + batches):
        req = [struct.pack("<I", len(batch))]
        for space, page in batch:
            size = physical_size(space_flags(files_b[space]))
            base_page = read_page(files_a.get(space), page, size)
            has_base = base_page is not None and any(base_page)
            req.append(struct.pack("<IIBI", space, page, 1 if has_base else 0, len(base_page) if has_base else 0))
            if has_base:
                req.append(base_page)
            recs = by_page[(space, page)]
            req.append(struct.pack("<I", len(recs)))
            for mtype, s, e, b in recs:
                req.append(struct.pack("<BQQI", mtype, s, e, len(b)) + b)
        _, body = helper.call(APPLY, b"".join(req))
        r = Reader(body)
        assert r.take("I") == len(batch)
        for space, page in batch:
            ok = r.take("B")
            error = r.blob("H").decode()
            page_lsn, applied = r.take("Q"), r.take("I")
            image = r.blob()
            if n == 0:
                first_images[(space, page)] = image
                continue
            if (space, page) in first_images and first_images.pop((space, page)) != image:
                different += 1
                say(f"DIFFERENT {space}:{page}: a second APPLY of the page in the same helper gave another image")
                continue
            want = read_page(files_b[space], page, physical_size(space_flags(files_b[space])))
            if ok and image == want:
                equal += 1
                continue
            if ok and want and lsn_only(image, want) and page_lsn <= page_lsn_of(want) and not any(
                    page_lsn < e <= page_lsn_of(want) for _, _, e, _ in by_page[(space, page)]):
                lsn_drift += 1  # dirtied by a mini-transaction that logged nothing for it
                continue
            different += 1
            if different <= 10:
                where = "" if not ok else _first_difference(image, want)
                want_lsn = struct.unpack_from(">Q", want, FIL_PAGE_LSN)[0] if want else None
                say(f"DIFFERENT {space}:{page} ({files_b[space].name}) page LSN {page_lsn}, mysqld's {want_lsn};"
                    f" {applied} of {len(by_page[(space, page)])} records applied {error}{where}")

    unlogged = 0
    for space, f in files_b.items():
        size = physical_size(space_flags(f))
        for page in range(f.stat().st_size // size):
            if (space, page) in by_page:
                continue
            a, b = read_page(files_a.get(space), page, size), read_page(f, page, size)
            if space == 0 and page == 0 and a and b:
                mask = slice(FIL_PAGE_FILE_FLUSH_LSN, FIL_PAGE_FILE_FLUSH_LSN + 8)
                a, b = _masked(a, mask), _masked(b, mask)
            if a and b and a != b and lsn_only(a, b) and page_lsn_of(a) <= page_lsn_of(b):
                lsn_drift += 1
                continue
            if (a or bytes(size)) != b:
                unlogged += 1
                if unlogged <= 10:
                    say(f"UNLOGGED {space}:{page} ({f.name}) changed without a redo record")
    failures += negative_checks(args, helper, volume, lsn_a, pages, by_page, files_a, files_b)
    helper.close()
    seen = ", ".join(f"{t}:{n}" for t, n in sorted(types.items()))
    say(f"record types seen (MLOG id: count): {seen}")
    say(f"{len(pages)} pages rebuilt: {equal} equal, {different} different; {lsn_drift} equal but for a page LSN"
        f" moved without a record; {unlogged} changed without redo")
    return 0 if different == 0 and unlogged == 0 and equal > 0 and failures == 0 else 1


def check_space_ops(ops: list, files_b: dict[int, Path], lsn_a: int, lsn_b: int) -> int:
    """The table the second workload created arrives as a create with its
    id, name and flags; size changes name known spaces; LSNs are in range."""
    failures = 0
    new_table = next((sid for sid, f in files_b.items() if f.name == "n.ibd" and f.parent.name == "pa"), None)
    creates = [op for op in ops if op[0] == "create" and op[1] == new_table]
    sdi = 1 << 14  # FSP_FLAGS_MASK_SDI: set by a later page-0 write, not at creation
    if new_table is None or len(creates) != 1 or not creates[0][4].endswith("pa/n.ibd") or \
            creates[0][2] | sdi != space_flags(files_b[new_table]) | sdi:
        say(f"FAIL: pa/n.ibd (space {new_table}) is not one create with its name and flags: {creates}")
        failures += 1
    else:
        say(f"ok: CREATE TABLE arrived as a tablespace create: {creates[0]}")
    bad = [op for op in ops if not lsn_a < op[5] <= lsn_b]
    sizes = [op for op in ops if op[0] in ("size", "extend") and op[1] == new_table]
    if bad or not sizes:
        say(f"FAIL: tablespace operations outside the redo range {bad[:3]}, or no size for pa/n.ibd")
        failures += 1
    else:
        say(f"ok: {len(ops)} tablespace operations in range; pa/n.ibd grew to {sizes[-1][3]} ({sizes[-1][0]})")
    return failures


def negative_checks(args, helper: Helper, volume: Path, lsn_a: int, pages, by_page, files_a, files_b) -> int:
    """Bad input gets a clear error, never a page; a broken frame ends the helper."""
    failures = 0

    def expect(ok: bool, what: str) -> None:
        nonlocal failures
        say(("ok: " if ok else "FAIL: ") + what)
        failures += 0 if ok else 1

    status = Path(f"/proc/{helper.proc.pid}/status").read_text()
    expect(args.seccomp != "kill" or "Seccomp:\t2" in status, "the helper runs under its seccomp filter")

    # An unknown record type where the first mini-transaction after LSN_A
    # starts, in a block whose checksum is made right again: InnoDB's parser
    # calls it corrupt log, and so does the helper.
    # Four blocks: the record may start near the end of its block and
    # continue in the next; an incomplete record is no verdict.
    start = lsn_a // BLOCK * BLOCK
    with open(volume / "innodb" / "redo.blocks", "rb") as fh:
        fh.seek(start)
        blocks = bytearray(fh.read(4 * BLOCK))
    blocks[lsn_a - start] = (blocks[lsn_a - start] & 0x80) | 0x7E
    blocks[BLOCK - 4:BLOCK] = struct.pack(">I", crc32c(bytes(blocks[:BLOCK - 4])))
    try:
        helper.call(PARSE, struct.pack("<QQI", lsn_a, start, len(blocks)) + bytes(blocks))
        expect(False, "an unknown record type is refused")
    except RuntimeError as e:
        expect("corrupt redo" in str(e), f"an unknown record type is refused ({e})")

    # A base image that fails its checksum: an error for that page only.
    target = next(((sp, pg) for sp, pg in pages if files_a.get(sp) and by_page[(sp, pg)][0][0] not in (33, 34)
                   and physical_size(space_flags(files_b[sp])) == PAGE), None)
    if target is not None:
        base_page = bytearray(read_page(files_a[target[0]], target[1], PAGE))
        base_page[PAGE // 2] ^= 0xFF
        recs = by_page[target]
        req = struct.pack("<IIIBI", 1, target[0], target[1], 1, PAGE) + bytes(base_page) + struct.pack("<I", len(recs))
        req += b"".join(struct.pack("<BQQI", t, s, e, len(b)) + b for t, s, e, b in recs)
        _, body = helper.call(APPLY, req)
        r = Reader(body)
        r.take("I")
        ok, error = r.take("B"), r.blob("H").decode()
        expect(ok == 0 and "checks" in error, f"a corrupt base image is refused ({error})")

    # A frame whose payload does not match its CRC ends the helper.
    payload = struct.pack("<I", PAGE)
    helper.proc.stdin.write(FRAME.pack(MAGIC, 1, HELLO, 999, len(payload), crc32c(payload) ^ 1) + payload)
    helper.proc.stdin.flush()
    expect(helper.proc.wait(timeout=30) != 0, "a frame with a bad CRC ends the helper")
    return failures


# Bytes a flush writes from the page LSN and the checksum: the checksum (0-3),
# FIL_PAGE_LSN (16-23) and, on uncompressed pages, the trailer (last 8).
def lsn_only(a: bytes, b: bytes) -> bool:
    if len(a) != len(b):
        return False
    stamped = set(range(0, 4)) | set(range(16, 24))
    if len(a) == PAGE:
        stamped |= set(range(PAGE - 8, PAGE))
    return all(a[i] == b[i] or i in stamped for i in range(len(a)))


def page_lsn_of(page: bytes) -> int:
    return struct.unpack_from(">Q", page, FIL_PAGE_LSN)[0]


def _masked(page: bytes, mask: slice) -> bytes:
    return page[:mask.start] + bytes(mask.stop - mask.start) + page[mask.stop:]


def _first_difference(a: bytes, b: bytes | None) -> str:
    if b is None:
        return " (no such page in B)"
    diff = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
    return f" {len(diff)} bytes differ, first at {diff[:8]}"


if __name__ == "__main__":
    sys.exit(main())
