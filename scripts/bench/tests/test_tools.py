"""scripts/bench/tools.py against scripts/setup: every program a benchmark script checks for is
installed by the set-up its error message names, and the --bench profile holds nothing else."""
import re
import subprocess
import unittest

import fakes  # noqa: F401 (puts scripts/ on sys.path)
from bench import tools

SCRIPTS = fakes.SCRIPTS


def setup_list(*args: str) -> set[str]:
    out = subprocess.run([str(SCRIPTS / "setup"), "--list", *args], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(out.stdout.split())


class SetupListsTest(unittest.TestCase):
    def test_each_program_is_installed_by_the_set_up_named_for_it(self):
        for program, (package, setup) in tools.PROGRAMS.items():
            self.assertTrue(setup.startswith("scripts/setup"), setup)
            self.assertIn(package, setup_list(*setup.split()[1:]), f"{program}: `{setup}` does not install {package}")

    def test_the_bench_profile_is_the_programs_of_the_table(self):
        bench_only = setup_list("--bench") - setup_list()
        self.assertEqual(bench_only, {p for p, s in tools.PROGRAMS.values() if s == "scripts/setup --bench"})

    def test_subcommands_require_only_programs_of_the_table(self):
        checked = set()
        for module in sorted((SCRIPTS / "bench").glob("*.py")):
            for names in re.findall(r"\brequire\(([^)]*)\)", module.read_text()):
                checked |= set(re.findall(r'"([^"]+)"', names))
        self.assertTrue(checked)
        self.assertEqual(checked - set(tools.PROGRAMS), set())
        self.assertEqual(list((SCRIPTS / "bench").glob("*.sh")), [])   # the one-off shell scripts are gone

    def test_require_names_the_command_that_installs(self):
        tools.require("perf", which=lambda p: f"/usr/bin/{p}")
        with self.assertRaises(SystemExit) as e:
            tools.require("sysbench", "perf", which=lambda p: None if p == "perf" else f"/usr/bin/{p}")
        self.assertEqual(str(e.exception),
                         "error: perf is not installed here; `scripts/setup --bench` installs it (Debian's linux-perf)")


if __name__ == "__main__":
    unittest.main()
