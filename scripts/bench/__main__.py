"""The strata-bench command line, as a file to run: scripts/strata-bench runs it.

With Debian's /usr/bin/python3 on purpose: python3-matplotlib (scripts/setup)
lives there. Run as a file, it puts scripts/ on the path instead of this
folder, so that `bench` and `strata_tools` import as packages.
"""
import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parents[1])
from bench.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
