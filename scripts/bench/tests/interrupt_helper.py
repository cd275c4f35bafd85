"""Runs a plan on fake servers and fake sysbench that never ends; the test interrupts it.

argv: WORKDIR. Exits with what strata-bench's run would: 130 after an interrupt.
"""
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fakes  # noqa: E402,F401  (puts scripts/ on sys.path)
from bench.plan import Plan  # noqa: E402
from bench.report import CsvLog  # noqa: E402
from bench.runner import Interrupted, Progress, Runner, Signals  # noqa: E402
from bench.scenarios import Dataset, scenario  # noqa: E402
from bench.targets import parse_targets  # noqa: E402


def main():
    work = Path(sys.argv[1])
    os.environ["FAKE_SB_MODE"] = "hang"
    os.environ["FAKE_SB_PIDS"] = str(work / "sysbench.pids")
    plan = Plan(parse_targets(["stock", "fork"], {"stock": 0, "fork": 0}), [Dataset("fixed", 2, 100)],
                [(scenario("read-point"), 4)], seconds=5, warmup=1, settle=0, pool_bytes=1 << 30)
    progress = Progress(sys.stdout)
    runner = Runner(plan, fakes.FakeServer, work / "data", work / "out", 23306,
                    sysbench_bin=str(fakes.FAKE_SYSBENCH), progress=progress)
    signals = Signals(progress)
    csv = CsvLog(work / "points.csv")
    with signals:
        try:
            runner.run(csv)
        except Interrupted:
            print("interrupted", flush=True)
            return 130
        finally:
            signals.cleaning = True
            runner.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
