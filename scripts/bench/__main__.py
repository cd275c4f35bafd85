#!/usr/bin/python3
"""sysbench scenarios on stock MySQL and the fork, side by side: see scripts/bench/cli.py.

Debian's /usr/bin/python3 on purpose: python3-matplotlib (scripts/setup) lives there.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
