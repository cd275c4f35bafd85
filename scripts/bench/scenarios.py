"""What can be measured: scenarios (a sysbench script plus options), datasets, presets.

A scenario is one transaction mix. All of them run on the same sysbench
schema (sbtest1..N from oltp_common.lua), so one prepared dataset serves all.

Datasets are sized from the InnoDB buffer pool of the targets:
- "full" (full cache): the whitepaper's 250 tables x 25,000 rows, with fewer
  tables if that would take more than FULL_FILL of the pool;
- "big": about BIG_RATIO x the pool, in tables of 800,000 rows (the smallest
  big-dataset row count of the whitepaper);
- "TxR" (e.g. 10x25000): exactly T tables of R rows.
Sizes are estimated with ROW_BYTES, measured on a prepared 9.7.2 datadir
(data + the k index, after sysbench's bulk insert).
"""
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

LUA_DIR = Path(__file__).resolve().parent / "lua"

# On-disk bytes per sbtest row in InnoDB (clustered index + k index), 9.7.2: a table
# of 200,000 rows prepared by sysbench is a 56 MiB .ibd file (294 bytes a row).
ROW_BYTES = 290
FULL_TABLES, FULL_ROWS = 250, 25_000
FULL_FILL = 0.6          # the full-cache data may use this share of the pool
BIG_ROWS = 800_000
BIG_RATIO = 2.0


@dataclass(frozen=True)
class Scenario:
    name: str
    script: str                    # a bundled script name or a path to our Lua
    options: tuple[tuple[str, str], ...]
    summary: str
    # Prepared statements one sysbench thread holds per table (oltp_common.lua
    # prepares every statement for every table), plus BEGIN/COMMIT per thread.
    stmts_per_table: int
    stmts_per_thread: int = 0

    def option_dict(self) -> dict[str, str]:
        return dict(self.options)

    def command_text(self) -> str:
        script = Path(self.script).name if "/" in self.script else self.script
        opts = " ".join(f"--{k}={v}" for k, v in self.options)
        return f"{script} {opts}".strip()


def _lua(name: str) -> str:
    return str(LUA_DIR / name)


SCENARIOS: dict[str, Scenario] = {s.name: s for s in [
    # The whitepaper's five.
    Scenario("write", "oltp_write_only", (),
             "write only: 1 index update, 1 non-index update, 1 delete + 1 insert per trx", 4, 2),
    Scenario("read-point", "oltp_point_select", (("skip_trx", "on"),),
             "read, point selects: one SELECT c WHERE id=? per event, autocommit", 1),
    Scenario("read-range", "oltp_read_only", (("point_selects", "0"), ("skip_trx", "on")),
             "read, range selects: simple, SUM, ORDER BY and DISTINCT ranges of 100 rows, autocommit", 5),
    Scenario("rw-point", "oltp_read_write", (("range_selects", "off"),),
             "read-write, point selects: 10 point selects + the write_only writes per trx", 5, 2),
    Scenario("rw-range", "oltp_read_write", (("point_selects", "0"),),
             "read-write, range selects: the 4 range selects + the write_only writes per trx", 9, 2),
    # The other vendor's runs.
    Scenario("select", "oltp_point_select", (("skip_trx", "on"),),
             "select only (same as read-point)", 1),
    Scenario("update", "oltp_update_non_index", (),
             "update only: one UPDATE c WHERE id=? per event, autocommit", 1),
    Scenario("update-index", "oltp_update_index", (),
             "one UPDATE k=k+1 WHERE id=? per event, autocommit", 1),
    Scenario("hybrid", _lua("strata_mix.lua"), (("point_selects", "1"), ("index_updates", "1")),
             "1 point select + 1 index update per trx (our Lua)", 2, 2),
    Scenario("mix-4to1", _lua("strata_mix.lua"), (("point_selects", "4"), ("index_updates", "1")),
             "4 point selects + 1 index update per trx (our Lua)", 2, 2),
    # Classic sweeps.
    Scenario("read-only", "oltp_read_only", (("skip_trx", "on"),),
             "oltp_read_only as bundled (10 point + 4 range selects), autocommit", 5),
    Scenario("read-write", "oltp_read_write", (),
             "oltp_read_write as bundled", 9, 2),
]}


class PlanError(ValueError):
    """Bad input: said in one line to the user."""


def scenario(name: str) -> Scenario:
    try:
        return SCENARIOS[name]
    except KeyError:
        raise PlanError(f"unknown scenario {name!r} (known: {', '.join(SCENARIOS)})") from None


@dataclass(frozen=True)
class Dataset:
    kind: str      # "full", "big" or "fixed"
    tables: int
    rows: int

    @property
    def slug(self) -> str:
        return f"{self.tables}x{self.rows}"

    @property
    def label(self) -> str:
        return f"{self.kind} ({self.tables}x{self.rows:,})" if self.kind != "fixed" else self.slug

    @property
    def est_bytes(self) -> int:
        return self.tables * self.rows * ROW_BYTES

    @property
    def fits_in_pool(self) -> bool:
        return self.kind != "big"


def dataset(spec: str, pool_bytes: int) -> Dataset:
    """full | big | TABLESxROWS, scaled to the pool."""
    spec = spec.strip().lower()
    if spec == "full":
        per_table = FULL_ROWS * ROW_BYTES
        tables = max(1, min(FULL_TABLES, int(pool_bytes * FULL_FILL // per_table)))
        return Dataset("full", tables, FULL_ROWS)
    if spec == "big":
        tables = max(1, math.ceil(pool_bytes * BIG_RATIO / (BIG_ROWS * ROW_BYTES)))
        return Dataset("big", tables, BIG_ROWS)
    m = re.fullmatch(r"(\d+)x(\d+)", spec)
    if m and int(m.group(1)) > 0 and int(m.group(2)) > 0:
        return Dataset("fixed", int(m.group(1)), int(m.group(2)))
    raise PlanError(f"unknown dataset {spec!r} (use full, big or TABLESxROWS such as 10x25000)")


@dataclass(frozen=True)
class Preset:
    name: str
    summary: str
    points: tuple[tuple[str, tuple[int, ...]], ...]   # scenario -> concurrencies
    datasets: tuple[str, ...]
    seconds: int
    warmup: int
    pool: str            # default pool size: "SIZE" or "PCT%" of RAM, capped below
    pool_cap: str | None = None
    notes: list[str] = field(default_factory=list)


PRESETS: dict[str, Preset] = {p.name: p for p in [
    Preset("quick", "a few minutes for a developer: 3 mixes x 2 concurrencies on a tiny dataset",
           (("read-point", (4, 32)), ("write", (4, 32)), ("mix-4to1", (4, 32))),
           ("8x10000",), seconds=10, warmup=5, pool="1G"),
    Preset("whitepaper", "the whitepaper's five scenarios at their smallest published concurrency, "
           "full-cache and big datasets",
           (("write", (96,)), ("read-point", (1500,)), ("read-range", (64,)),
            ("rw-point", (512,)), ("rw-range", (64,))),
           ("full", "big"), seconds=120, warmup=30, pool="25%", pool_cap="3G"),
    Preset("thousand-connections", "select / update / hybrid from 16 to 2048 connections",
           (("select", (16, 64, 256, 512, 1024, 2048)), ("update", (16, 64, 256, 512, 1024, 2048)),
            ("hybrid", (16, 64, 256, 512, 1024, 2048))),
           ("10x25000",), seconds=45, warmup=15, pool="2G"),
]}


def preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise PlanError(f"unknown preset {name!r} (known: {', '.join(PRESETS)})") from None


_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?", re.I)


def parse_size(text: str, ram_bytes: int) -> int:
    """'3G', '512M', '1.5g', '25%' (of RAM) -> bytes."""
    text = text.strip()
    if text.endswith("%"):
        try:
            pct = float(text[:-1])
        except ValueError:
            raise PlanError(f"bad size {text!r}") from None
        if not 0 < pct <= 90:
            raise PlanError(f"pool share {text!r} must be in (0, 90]%")
        return int(ram_bytes * pct / 100)
    m = _SIZE.fullmatch(text)
    if not m:
        raise PlanError(f"bad size {text!r} (use e.g. 512M, 3G or 25%)")
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    return int(float(m.group(1)) * scale)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"
