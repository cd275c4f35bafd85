#!/usr/bin/env python3
"""The cluster CLI's rule for log-service nodes whose redo belongs to no data
directory (tier 1, ctest scripts.cluster_cli_volume; no server build needed).

A primary about to be initialised needs empty nodes: mysqld --initialize
refuses a volume that holds redo (the nodes keep one volume, and a writer
cannot cut it back to LSN 0). So `up` empties the nodes then, and only then:
never while the primary's data directory exists.
"""
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from strata_tools import cluster_cli  # noqa: E402


def members(root: Path) -> list[dict]:
    nodes = [{"kind": "logserviced", "name": f"lognode{i}", "flavor": "fork", "build": str(root / "build"),
              "home": str(root / f"lognode{i}"), "port": 7100 + i, "secret_file": str(root / "secret")}
             for i in (1, 2, 3)]
    primary = {"kind": "mysqld", "name": "mysqld", "flavor": "fork", "build": str(root / "build"),
               "home": str(root / "mysqld"), "port": 3306, "options": {}}
    return nodes + [primary]


def fill_node(root: Path, i: int) -> Path:
    data = root / f"lognode{i}" / "data"
    (data / "redo").mkdir(parents=True)
    (data / "checkpoint").write_text("x")
    return data


class OrphanedVolumeTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory(prefix="strata-cli-volume-")
        self.root = Path(self.tmp.name)

    def tearDown(self):
        self.tmp.cleanup()

    def test_nodes_are_emptied_before_the_primary_is_initialised(self):
        data = [fill_node(self.root, i) for i in (1, 2, 3)]
        cluster_cli.discard_orphaned_volume(members(self.root))
        for d in data:
            self.assertFalse(d.exists(), d)

    def test_nodes_of_an_initialised_primary_are_kept(self):
        data = [fill_node(self.root, i) for i in (1, 2, 3)]
        (self.root / "mysqld" / "data").mkdir(parents=True)
        (self.root / "mysqld" / "data" / "mysql.ibd").write_text("x")
        cluster_cli.discard_orphaned_volume(members(self.root))
        for d in data:
            self.assertTrue((d / "checkpoint").exists(), d)

    def test_fresh_nodes_are_left_alone(self):
        cluster_cli.discard_orphaned_volume(members(self.root))  # no data directories at all: nothing to do
        self.assertFalse((self.root / "lognode1").exists())


if __name__ == "__main__":
    unittest.main()
