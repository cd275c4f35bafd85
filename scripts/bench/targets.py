"""Benchmark targets: a server flavor plus my.cnf overrides, and their data directories.

A target is written `FLAVOR[:opt=value,opt=value...]`, e.g. `stock`, `fork`,
`fork:thread_handling=pool-of-threads`. FLAVOR names a server build
(strata_tools.paths.SERVER_BUILDS); the overrides go into its my.cnf after
the common benchmark settings (server_options), so a target can change any of
them. An option without a value (`fork:skip-name-resolve`) is written bare.

Each (target, dataset) pair owns one MysqldInstance home:

    .build/bench/data/<target slug>/<TABLES>x<ROWS>/
        my.cnf  data/  mysqld.err  dataset.json

dataset.json is written only after `sysbench prepare` finished; a home
without it (an interrupted prepare) gets a fresh data directory next time.
Data is reused across runs, so the write scenarios of one run see the rows
that earlier runs updated (as on a long-lived benchmark server).
"""
import hashlib
import json
import os
import re
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from .scenarios import Dataset, PlanError

MARKER = "dataset.json"
MARKER_VERSION = 1

# MySQL's hard ceiling for max_prepared_stmt_count.
MAX_PREPARED_STMT_LIMIT = 4_194_304


@dataclass(frozen=True)
class Target:
    spec: str                      # as the user wrote it; also the label in reports
    flavor: str
    overrides: tuple[tuple[str, str | None], ...] = ()

    @property
    def slug(self) -> str:
        if not self.overrides:
            return self.flavor
        text = re.sub(r"[^A-Za-z0-9_.-]+", "-", self.spec).strip("-")
        if len(text) > 60:
            text = text[:48] + "-" + hashlib.sha1(self.spec.encode()).hexdigest()[:10]
        return text


def parse_target(spec: str, flavors: dict) -> Target:
    spec = spec.strip()
    flavor, _, rest = spec.partition(":")
    if flavor not in flavors:
        raise PlanError(f"unknown target {spec!r}: the flavor must be one of {', '.join(flavors)}"
                        f" (e.g. fork:thread_handling=pool-of-threads)")
    overrides: list[tuple[str, str | None]] = []
    for item in filter(None, (part.strip() for part in rest.split(","))):
        key, eq, value = item.partition("=")
        key = key.strip()
        if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_-]*", key):
            raise PlanError(f"target {spec!r}: bad option {item!r} (use name=value)")
        overrides.append((key, value.strip() if eq else None))
    return Target(spec, flavor, tuple(overrides))


def parse_targets(specs: list[str], flavors: dict) -> list[Target]:
    targets = [parse_target(s, flavors) for s in specs]
    seen = set()
    for t in targets:
        if t.spec in seen:
            raise PlanError(f"target {t.spec!r} is given twice")
        seen.add(t.spec)
    slugs = [t.slug for t in targets]
    if len(set(slugs)) != len(slugs):
        raise PlanError("two targets map to the same data folder; make their specs differ in letters")
    return targets


@dataclass(frozen=True)
class ServerNeeds:
    """What the whole plan asks of every server (so all targets get the same settings)."""
    max_threads: int
    max_tables: int
    prepared_stmts: int


def server_options(pool_bytes: int, needs: ServerNeeds, extra: dict | None = None) -> dict[str, str | None]:
    """The common my.cnf of benchmark targets; identical for every target."""
    max_connections = needs.max_threads + 64
    table_open_cache = max(4000, 2 * needs.max_threads)
    opts: dict[str, str | None] = {
        "innodb_buffer_pool_size": str(pool_bytes),
        "innodb_redo_log_capacity": str(2 << 30),
        "innodb_flush_log_at_trx_commit": "1",
        # O_DIRECT (9.7's Linux default, written out) keeps the OS page cache from
        # holding the "big" dataset that does not fit in the pool.
        "innodb_flush_method": "O_DIRECT",
        "skip-log-bin": None,
        "max_connections": str(max_connections),
        "max_prepared_stmt_count": str(prepared_stmt_limit(needs.prepared_stmts)),
        "table_open_cache": str(table_open_cache),
        "table_definition_cache": str(max(2000, needs.max_tables + 400)),
        "open_files_limit": str(open_files_needed(needs)),
    }
    if extra:
        opts.update(extra)
    return opts


def prepared_stmt_limit(needed: int) -> int:
    """max_prepared_stmt_count: MySQL's default (16382) unless the plan needs more."""
    return min(MAX_PREPARED_STMT_LIMIT, max(16382, int(needed * 1.1) + 1000))


def open_files_needed(needs: ServerNeeds) -> int:
    """File descriptors mysqld needs, by MySQL's own rule (10 + max_connections +
    2 x table_open_cache), with room for InnoDB's files; sysbench needs fewer."""
    return 10 + (needs.max_threads + 64) + 2 * max(4000, 2 * needs.max_threads) + 1024


def home_of(root: Path, target: Target, ds: Dataset) -> Path:
    return root / target.slug / ds.slug


def read_marker(home: Path) -> dict | None:
    try:
        data = json.loads((home / MARKER).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def marker_matches(home: Path, ds: Dataset) -> bool:
    m = read_marker(home)
    return bool(m) and m.get("version") == MARKER_VERSION and m.get("tables") == ds.tables \
        and m.get("rows") == ds.rows and m.get("state") == "ready"


def write_marker(home: Path, ds: Dataset, target: Target, prepare_seconds: float, bytes_on_disk: int) -> None:
    data = {
        "version": MARKER_VERSION, "state": "ready", "tables": ds.tables, "rows": ds.rows,
        "target": target.spec, "prepared_at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "prepare_seconds": round(prepare_seconds, 1), "bytes_on_disk": bytes_on_disk,
        "schema": "sysbench 1.0.20 oltp_common.lua, database sbtest",
    }
    tmp = home / (MARKER + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(home / MARKER)


def forget_dataset(home: Path, datadir: Path) -> None:
    """Drop a data directory whose dataset is not known to be complete."""
    try:
        (home / MARKER).unlink()
    except FileNotFoundError:
        pass
    shutil.rmtree(datadir, ignore_errors=True)


def dir_bytes(path: Path) -> int:
    total = 0
    for dirpath, _, files in os.walk(path):
        for name in files:
            try:
                total += os.stat(os.path.join(dirpath, name)).st_size
            except OSError:
                pass
    return total
