"""The page server with InnoDB's own apply code, end to end: does GetPage at
the LSN of a clean shutdown return the pages mysqld wrote?

    python3 scripts/tests/page_server_check.py [--build DIR] [--dir DIR] [--rows N] [--sysbench SECONDS]

One cluster under --dir: three logserviced nodes holding mysqld's redo, and a
pageserverd (helper=innodb: children running this build's
`mysqld --strata-page-apply`) following them. The steps:

  1. --initialize, a first workload, a clean shutdown: the data directory's
     pages, at the shutdown's LSN A (page 0:0's flush LSN), seed the page
     server (pageserverctl put-file per tablespace), which starts following
     the log at A with its retention pin there;
  2. with mysqld in compare mode, a second workload (page splits, updates,
     deletes, a compressed table, a new table) and DDL that InnoDB writes
     without redo (sorted index builds, rebuilds with off-page columns, a
     temporary table), which compare mode puts into the redo as full pages;
     a clean shutdown at LSN B;
  3. every page of every tablespace in the final data directory is asked
     at B (pageserverctl get-file, GetPages of 64): each must equal
     mysqld's page byte for byte, or differ only by a page LSN that a
     mini-transaction moved without logging for that page.

The closing line counts pages equal, different and not served; the exit
status is 0 only when none differs and every page was served. Logs of every
process stay under --dir.
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
    sys.path.insert(1, str(Path(__file__).resolve().parent))
from strata_tools import logservice, paths, ports  # noqa: E402
from strata_tools.mysqld import MysqldInstance  # noqa: E402
from strata_tools.pageserver import (FIL_PAGE_FILE_FLUSH_LSN, PageServer, flush_lsn, physical_size,  # noqa: E402
                                     seed, space_files, space_flags)
from page_apply_check import crc32c, lsn_only, page_lsn_of, workload_one, workload_two  # noqa: E402


def say(message: str) -> None:
    print(f"page-server-check: {message}", flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", type=Path, default=paths.server_build("fork"))
    ap.add_argument("--dir", type=Path, default=paths.BUILD / "page-server-check")
    ap.add_argument("--rows", type=int, default=6000)
    ap.add_argument("--keep", action="store_true", help="leave the cluster running (to look at a failure)")
    ap.add_argument("--sysbench", type=int, default=0, metavar="SECONDS",
                    help="also run sysbench's oltp_read_write for this long in the second workload (after its "
                         "prepare, whose CREATE INDEX is a sorted build), with --sysbench-rows rows in each of 4 tables")
    ap.add_argument("--sysbench-rows", type=int, default=50000)
    args = ap.parse_args()

    shutil.rmtree(args.dir, ignore_errors=True)
    avoid: set[int] = set()
    members = logservice.plan_nodes(args.build, args.dir, {}, avoid)
    nodes = [logservice.LogNode.of(m) for m in members]
    for node in nodes:
        node.start()
    options = logservice.mysqld_options(members)
    options.update({"innodb-buffer-pool-size": "32M", "innodb-change-buffering": "none"})
    m = MysqldInstance(name="mysqld", build=args.build, home=args.dir / "mysqld",
                       port=ports.free_port(13506, avoid=avoid), options=options)
    ps = None
    try:
        say("initialising")
        m.initialize()
        m.start()
        workload_one(m)
        m.stop()
        base = args.dir / "base"
        shutil.copytree(m.datadir, base)
        lsn_a = flush_lsn(base)
        ps = PageServer(args.build, args.dir / "ps1", members, lsn_a)
        try:
            seeded = seed(ps, base, lsn_a)
        except RuntimeError as e:
            say(f"FAIL: {e}")
            return 1
        say(f"seeded with {seeded} pages at LSN {lsn_a}")
        # From here the compute runs in compare mode: that is what makes it
        # put the pages it writes without redo (index builds) into the redo.
        m.options.update({"innodb-page-service": "compare",
                          "innodb-page-service-addresses": f"tcp://{ports.LOOPBACK}:{ps.port}",
                          "innodb-page-service-compare-action": "log"})
        m.write_config()
        m.start()
        workload_two(m, args.rows)
        if args.sysbench:
            sysbench(m, args)
        full = workload_ddl(m)
        m.stop()
        lsn_b = flush_lsn(m.datadir)
        deadline = time.monotonic() + 120
        while ps.status().get("ingested_lsn", 0) < lsn_b and time.monotonic() < deadline:
            time.sleep(0.5)
        st = ps.status()
        say(f"redo {lsn_a}..{lsn_b}; the page server ingested to {st.get('ingested_lsn')}, "
            f"{st.get('records_ingested')} records")
        failures = compare(args, ps, m.datadir, lsn_b)
        if full.get("full_page_records", 0) == 0:
            say(f"FAIL: the index builds put only {full.get('full_page_records', 0)} full pages into the redo")
            failures += 1
        tables = 4 if args.sysbench else 0
        failures += compare_mode(args, ps, m, sysbench_tables=tables)
        return failures + on_mode(args, ps, m, sysbench_tables=tables)
    finally:
        if args.keep:
            say(f"left running: pageserverd on port {ps.port if ps else None}, nodes, mysqld stopped")
            return 1
        if ps is not None:
            ps.stop()
        if m.running():
            m.stop()
        for node in nodes:
            node.stop()


def page_service_status(m: MysqldInstance) -> dict[str, int]:
    return {k.removeprefix("Innodb_page_service_"): int(v) for k, v in (line.split("\t") for line in
            m.sql("SHOW GLOBAL STATUS LIKE 'Innodb_page_service%'").splitlines())}


def sysbench(m: MysqldInstance, args) -> None:
    """sysbench as users run it, with every page read compared: a 32 MiB
    buffer pool holds less than the tables, so the run reads pages back."""
    m.sql("CREATE DATABASE sbtest")
    common = ["--db-driver=mysql", f"--mysql-socket={m.socket}", "--mysql-user=root", "--mysql-db=sbtest",
              "--tables=4", f"--table-size={args.sysbench_rows}"]
    for step in (["prepare"], ["run", "--threads=8", f"--time={args.sysbench}", "--report-interval=10"]):
        r = subprocess.run(["sysbench", "oltp_read_write", *common, *step], capture_output=True, text=True,
                           timeout=args.sysbench + 600)
        (args.dir / f"sysbench-{step[0]}.out").write_text(r.stdout + r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"sysbench {step[0]} failed; see {args.dir}/sysbench-{step[0]}.out")
    tps = [line.strip() for line in r.stdout.splitlines() if "transactions:" in line]
    say(f"sysbench oltp_read_write {args.sysbench} s, 8 threads, 4 x {args.sysbench_rows} rows: {tps[0] if tps else '?'}")


def workload_ddl(m: MysqldInstance) -> dict[str, int]:
    """What InnoDB writes without redo, and the page-service mode puts into
    the redo as full pages: sorted index builds (a secondary index added in
    place, on a plain and on a compressed table; table rebuilds, one with
    off-page columns), and a temporary table (its id is written to the
    dictionary header page without redo). The index on pa.t has three
    levels: its middle level's pages are last written by mini-transactions
    that mark nothing modified."""
    m.sql("ALTER TABLE pa.t ADD INDEX kp (k, pad(250)), ALGORITHM=INPLACE")
    m.sql("ALTER TABLE pa.z ADD INDEX zp (pad(30)), ALGORITHM=INPLACE")
    m.sql("ALTER TABLE pa.n FORCE, ALGORITHM=INPLACE")
    m.sql("CREATE TABLE pa.b (id INT PRIMARY KEY, doc LONGTEXT, KEY(id, doc(10))) ENGINE=InnoDB;"
          "INSERT INTO pa.b SELECT id, REPEAT(CONCAT(id, 'lob'), 3000 + id) FROM pa.t WHERE id <= 120;"
          "ALTER TABLE pa.b FORCE, ALGORITHM=INPLACE")
    m.sql("CREATE TEMPORARY TABLE pa.tmp (a INT) ENGINE=InnoDB; INSERT INTO pa.tmp VALUES (1); DROP TEMPORARY TABLE pa.tmp")
    status = page_service_status(m)
    say(f"index builds: {status.get('full_page_records')} full pages, {status.get('full_page_redo_bytes')} bytes of "
        f"redo for them, {status.get('unlogged_writes')} pages that could not be logged; so far "
        f"{status.get('compared')} page reads compared, {status.get('mismatches')} mismatches")
    return status


def crc32_page_checksum(page: bytes) -> int:
    """InnoDB's crc32 page checksum (bytes 4-25 and 38 to size-8)."""
    return crc32c(page[4:26]) ^ crc32c(page[38:len(page) - 8])


def compare_mode(args, ps: PageServer, m: MysqldInstance, sysbench_tables: int = 0) -> int:
    """mysqld with innodb_page_service=compare and a small buffer pool: every
    page it reads is compared with the page server's. One page is made wrong
    on the page server first (a valid page with one byte changed, as an
    image at its newest LSN): that page, and only it, must be reported."""
    t = next(f for f in space_files(m.datadir).values() if f.name == "t.ibd")
    data = t.read_bytes()
    sid = struct.unpack_from(">I", data, 34)[0]
    # A leaf page from the middle of the table: the scans below read it from
    # the file (a root page may be read while start-up's recovery is still
    # on, when nothing is compared, and then stay in the buffer pool).

    def is_leaf(n: int) -> bool:
        p = data[n * 16384:(n + 1) * 16384]
        return struct.unpack_from(">H", p, 24)[0] == 17855 and struct.unpack_from(">H", p, 64)[0] == 0
    leaves = [n for n in range(5, len(data) // 16384) if is_leaf(n)]
    victim = leaves[len(leaves) // 2]
    page = bytearray(data[victim * 16384:(victim + 1) * 16384])
    page[8000] ^= 0x5A
    checksum = struct.pack(">I", crc32_page_checksum(bytes(page)))
    page[0:4] = checksum
    page[16384 - 8:16384 - 4] = checksum
    wrong = args.dir / "wrong-page"
    wrong.write_bytes(bytes(victim * 16384) + bytes(page))
    say(f"page {sid}:{victim} made wrong on the page server")
    # At the newest LSN the page server has, above any image it made itself.
    r = ps.ctl("put-file", f"--file={wrong}", f"--space={sid}", "--page_bytes=16384",
               f"--lsn={ps.status()['ingested_lsn']}")
    if r.returncode != 0:
        say(f"FAIL: could not put the wrong page: {r.stdout.strip()} {r.stderr.strip()}")
        return 1
    m.options.update({"innodb-page-service": "compare", "innodb-page-service-addresses": f"tcp://{ports.LOOPBACK}:{ps.port}",
                      "innodb-page-service-compare-action": "log", "innodb-buffer-pool-size": "5M",
                      "innodb-buffer-pool-load-at-startup": "OFF"})
    m.write_config()
    m.start()
    try:
        for _ in range(2):
            m.sql("SELECT COUNT(*), SUM(LENGTH(pad)) FROM pa.t FORCE INDEX (PRIMARY); SELECT COUNT(*) FROM pa.t FORCE INDEX (k);"
                  "SELECT COUNT(*) FROM pa.t FORCE INDEX (kp); SELECT COUNT(*) FROM pa.z FORCE INDEX (zp);"
                  "SELECT COUNT(*), SUM(LENGTH(pad)) FROM pa.z; SELECT COUNT(*) FROM pa.n;"
                  "SELECT COUNT(*), SUM(LENGTH(doc)) FROM pa.b; SELECT COUNT(*) FROM mysql.help_topic"
                  + "".join(f"; SELECT COUNT(*), SUM(LENGTH(c)) FROM sbtest.sbtest{i} FORCE INDEX (PRIMARY)"
                            f"; SELECT COUNT(*) FROM sbtest.sbtest{i} FORCE INDEX (k_{i})"
                            for i in range(1, sysbench_tables + 1)))
            m.sql("UPDATE pa.t SET k = k + 1 WHERE id % 17 = 0; UPDATE pa.n SET v = REPEAT('m', 120) WHERE id % 5 = 0")
        status = {"Innodb_page_service_" + k: v for k, v in page_service_status(m).items()}
    finally:
        m.stop()
    mismatches = [line for line in m.error_log.read_text(errors="replace").splitlines() if "page service mismatch" in line]
    named = [line for line in mismatches if f"page {sid}:{victim} " in line]
    say("compare mode: " + ", ".join(f"{k.removeprefix('Innodb_page_service_')}={v}" for k, v in sorted(status.items())))
    # The counter is read before the shutdown, which reads pages too.
    ok = (status.get("Innodb_page_service_compared", 0) >= 300 and 1 <= status.get("Innodb_page_service_mismatches", 0)
          and status["Innodb_page_service_mismatches"] <= len(mismatches) and len(named) == len(mismatches))
    say(("ok" if ok else "FAIL") + f": {len(mismatches)} mismatch(es) reported, {len(named)} of them the page made wrong"
        f" ({sid}:{victim}); every other page read equals the page server's")
    for line in mismatches[:2]:
        say("  " + line[:300])
    return 0 if ok else 1


def read_queries(sysbench_tables: int) -> str:
    return ("CHECKSUM TABLE pa.t, pa.z, pa.n, pa.b; SELECT COUNT(*), SUM(k) FROM pa.t FORCE INDEX (k);"
            "SELECT COUNT(*), SUM(k) FROM pa.t FORCE INDEX (kp); SELECT COUNT(*), MAX(pad) FROM pa.z FORCE INDEX (zp);"
            "SELECT COUNT(*), SUM(LENGTH(doc)) FROM pa.b; SELECT COUNT(*) FROM mysql.help_topic"
            + "".join(f"; CHECKSUM TABLE sbtest.sbtest{i}; SELECT COUNT(*), SUM(k) FROM sbtest.sbtest{i} FORCE INDEX (k_{i})"
                      for i in range(1, sysbench_tables + 1)))


def on_mode(args, ps: PageServer, m: MysqldInstance, sysbench_tables: int = 0) -> int:
    """mysqld with innodb_page_service=on and a 5 MiB buffer pool: every page
    it reads comes from the page server. The same queries must answer as
    they do reading the files; writes, an index build and a kill -9 with
    crash recovery reading through the page server must lose nothing; and
    the page server must still hold every page as mysqld wrote it."""
    # First the page made wrong on purpose gets its right image back (the
    # file's, at the LSN of the shutdown that wrote it).
    t = next(f for f in space_files(m.datadir).values() if f.name == "t.ibd")
    sid = struct.unpack_from(">I", t.read_bytes(), 34)[0]
    deadline = time.monotonic() + 60
    while ps.status().get("ingested_lsn", 0) < flush_lsn(m.datadir) and time.monotonic() < deadline:
        time.sleep(0.2)
    r = ps.ctl("put-file", f"--file={t}", f"--space={sid}", "--page_bytes=16384", f"--lsn={ps.status()['ingested_lsn']}")
    if r.returncode != 0:
        say(f"FAIL: could not restore {t.name} on the page server: {r.stdout.strip()} {r.stderr.strip()}")
        return 1
    small = {"innodb-buffer-pool-size": "5M", "innodb-buffer-pool-load-at-startup": "OFF"}
    m.options.update({"innodb-page-service": "off", **small})
    m.write_config()
    m.start()
    try:
        expected = m.sql(read_queries(sysbench_tables), timeout=300)
    finally:
        m.stop()
    m.options.update({"innodb-page-service": "on"})
    m.write_config()
    m.start()
    failures = 0
    try:
        got = m.sql(read_queries(sysbench_tables), timeout=300)
        status = page_service_status(m)
        if got != expected:
            say("FAIL: with pages from the page server the queries answer differently:\n"
                f"  files: {expected!r}\n  page server: {got!r}")
            failures += 1
        if status.get("pages_read", 0) < 300:
            say(f"FAIL: only {status.get('pages_read')} pages were read from the page server")
            failures += 1
        say(f"on mode: the same answers as from the files; {status.get('pages_read')} pages read from the page server "
            f"in {status.get('read_us', 0) // max(1, status.get('pages_read', 1))} us each on average, "
            f"last-written LSN hits {status.get('lwlsn_hits')}, fallbacks {status.get('lwlsn_fallbacks')}")
        # Writes that evict and read back their own pages, and an index build.
        m.sql("UPDATE pa.t SET pad = CONCAT('on', SUBSTRING(pad, 3)) WHERE id % 3 = 0;"
              "INSERT INTO pa.n (v) SELECT REPEAT('o', 180) FROM pa.t LIMIT 3000;"
              "ALTER TABLE pa.n ADD INDEX vn (v(40)), ALGORITHM=INPLACE", timeout=300)
        counts = m.sql("SELECT COUNT(*) FROM pa.n; SELECT COUNT(*) FROM pa.t WHERE pad LIKE 'on%'")
        # Committed rows, then kill -9: crash recovery reads through the page server.
        m.sql("CREATE TABLE pa.k (id INT PRIMARY KEY, v VARCHAR(300)) ENGINE=InnoDB")
        for i in range(20):
            m.sql(f"INSERT INTO pa.k SELECT id + {i * 100000}, REPEAT('k', 250) FROM pa.t WHERE id % 20 = {i}")
        committed = m.sql("SELECT COUNT(*) FROM pa.k")
        subprocess.run(["kill", "-9", str(m.pid())], check=True)
        deadline = time.monotonic() + 60
        while (m.running() or not ports.is_free(m.port)) and time.monotonic() < deadline:
            time.sleep(0.2)
        m.start(timeout=300)
        after = m.sql("SELECT COUNT(*) FROM pa.n; SELECT COUNT(*) FROM pa.t WHERE pad LIKE 'on%'")
        if after != counts or m.sql("SELECT COUNT(*) FROM pa.k") != committed:
            say(f"FAIL: after kill -9 and recovery through the page server: {after!r} / "
                f"{m.sql('SELECT COUNT(*) FROM pa.k')!r}, committed {counts!r} / {committed!r}")
            failures += 1
        check = m.sql("CHECK TABLE pa.t, pa.z, pa.n, pa.b, pa.k", timeout=300)
        if any(line.split("\t")[-1] != "OK" for line in check.splitlines() if "\tstatus\t" in line or "\terror\t" in line):
            say(f"FAIL: CHECK TABLE after recovery: {check!r}")
            failures += 1
        say(f"on mode after kill -9: {committed.strip()} committed rows recovered, CHECK TABLE ok; "
            f"{page_service_status(m).get('pages_read')} pages read from the page server since the restart")
    finally:
        m.stop()
    lsn = flush_lsn(m.datadir)
    deadline = time.monotonic() + 120
    while ps.status().get("ingested_lsn", 0) < lsn and time.monotonic() < deadline:
        time.sleep(0.5)
    return failures + compare(args, ps, m.datadir, lsn)


def compare(args, ps: PageServer, datadir: Path, lsn: int) -> int:
    equal = drift = different = unserved = 0
    for sid, f in sorted(space_files(datadir).items()):
        size = physical_size(space_flags(f))
        pages = f.stat().st_size // size
        out = args.dir / f"served-{sid}"
        r = ps.ctl("get-file", f"--space={sid}", f"--pages={pages}", f"--lsn={lsn}", f"--out={out}")
        not_ok = [line for line in r.stdout.splitlines() if line.startswith("page=")]
        unserved += len(not_ok)
        for line in not_ok[:3]:
            say(f"NOT SERVED {f.name}: {line}")
        served, mine = out.read_bytes(), f.read_bytes()
        for page in range(pages):
            a, b = served[page * size:(page + 1) * size], mine[page * size:(page + 1) * size]
            if sid == 0 and page == 0:  # the shutdown's flush LSN, written without redo (design note, section 6)
                a, b = [p[:FIL_PAGE_FILE_FLUSH_LSN] + bytes(8) + p[FIL_PAGE_FILE_FLUSH_LSN + 8:] for p in (a, b)]
            if a == b:
                equal += 1
            elif len(a) == len(b) and lsn_only(a, b) and page_lsn_of(a) <= page_lsn_of(b):
                drift += 1
            elif not any(b) and not any(a):
                equal += 1
            else:
                different += 1
                if different <= 10:
                    diff = [i for i in range(min(len(a), len(b))) if a[i] != b[i]]
                    say(f"DIFFERENT {sid}:{page} ({f.name}) served LSN {page_lsn_of(a) if len(a) >= 24 else None}, "
                        f"mysqld's {page_lsn_of(b)}; {len(diff)} bytes differ, first at {diff[:6]}")
    say(f"{equal + drift + different} pages compared at LSN {lsn}: {equal} equal, {different} different; {drift} equal "
        f"but for a page LSN moved without a record; {unserved} not served")
    return 0 if different == 0 and unserved == 0 and equal > 0 else 1


if __name__ == "__main__":
    sys.exit(main())
