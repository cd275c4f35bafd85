"""What a subcommand built on the plan runner (`run`, `interleave`, `cost`, `audit`) changes."""
from pathlib import Path

from .runner import Runner


class Kind:
    """What a subcommand built on the plan runner changes: its Runner class, the name of its results
    folder, what it adds to the setup and to the page (sections computed from its own CSV)."""
    name = "run"
    runner_class = Runner
    setup: list[str] = []

    def __init__(self):
        self.plots: list[Path] = []   # written by sections(), shown on the page after the standard plots

    def sections(self, runner: Runner, out_dir: Path) -> list[str]:
        return []
