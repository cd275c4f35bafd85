#!/usr/bin/env python3
"""The README's first commands work where python3 is not installed (tier 1, ctest scripts.entry_points).

scripts/strata-cluster and scripts/strata-bench are bash entry points in front
of Python. Each runs here as a copy in a scratch scripts/ folder, with its
lib.sh, and with stand-ins that record what they are asked, in order, into
one log:
- scripts/setup: "installs" python3 (puts the fake python3 on PATH);
- apt-get: the same on `install ... python3`;
- python3 (once installed): records its arguments, i.e. what was exec'ed;
- id: says root, or not (FAKE_UID).
PATH holds links to every program of the machine except python*, apt-get,
sudo and id, so python3 is missing until a stand-in installs it.
"""
import os
import shutil
import stat
import subprocess
import tempfile
import unittest
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[1]
HIDDEN = ("apt-get", "sudo", "id")

FAKE_PYTHON = """#!/bin/sh
echo "python3 $*" >>"$STUB_LOG"
"""
FAKE_SETUP = """#!/bin/sh
echo "setup $*" >>"$STUB_LOG"
[ "${SETUP_RC:-0}" -eq 0 ] || exit "$SETUP_RC"
cp "$FAKE_PYTHON" "$FAKE_BIN/python3"
"""
FAKE_APT_GET = """#!/bin/sh
echo "apt-get $*" >>"$STUB_LOG"
case " $* " in *" install "*" python3 "*) cp "$FAKE_PYTHON" "$FAKE_BIN/python3" ;; esac
"""
FAKE_ID = """#!/bin/sh
echo "${FAKE_UID:-0}"
"""
# Stands for the strata-bench command line: run by the real /usr/bin/python3.
FAKE_BENCH_MAIN = """import os, sys
with open(os.environ["STUB_LOG"], "a") as log:
    log.write("bench " + " ".join(sys.argv[1:]) + "\\n")
"""


def write(path: Path, text: str, executable: bool = True) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


class EntryPointTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory(prefix="strata-entry-points-")
        cls.sysbin = Path(cls.tmp.name) / "sysbin"
        cls.sysbin.mkdir()
        for d in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"):
            if not os.path.isdir(d):
                continue
            for name in os.listdir(d):
                link = cls.sysbin / name
                if name.startswith("python") or name in HIDDEN or link.exists() or link.is_symlink():
                    continue
                link.symlink_to(os.path.join(d, name))

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def setUp(self):
        self.root = Path(tempfile.mkdtemp(dir=self.tmp.name))
        self.scripts = self.root / "repo" / "scripts"
        for name in ("strata-cluster", "strata-bench", "lib.sh", "upstream.env"):
            self.scripts.mkdir(parents=True, exist_ok=True)
            shutil.copy2(SCRIPTS / name, self.scripts / name)
        write(self.scripts / "setup", FAKE_SETUP)
        write(self.scripts / "bench" / "__main__.py", FAKE_BENCH_MAIN, executable=False)
        self.bin = self.root / "bin"
        write(self.bin / "apt-get", FAKE_APT_GET)
        write(self.bin / "id", FAKE_ID)
        write(self.root / "fake-python3", FAKE_PYTHON)
        self.log = self.root / "log"
        self.log.touch()

    def run_entry(self, name: str, *args: str, uid: int = 0, setup_rc: int = 0,
                  python_installed: bool = False) -> subprocess.CompletedProcess:
        if python_installed:
            shutil.copy2(self.root / "fake-python3", self.bin / "python3")
        env = {"PATH": f"{self.bin}:{self.sysbin}", "HOME": str(self.root), "STUB_LOG": str(self.log),
               "FAKE_BIN": str(self.bin), "FAKE_PYTHON": str(self.root / "fake-python3"),
               "FAKE_UID": str(uid), "SETUP_RC": str(setup_rc)}
        return subprocess.run([str(self.scripts / name), *args], env=env, capture_output=True, text=True,
                              timeout=60, stdin=subprocess.DEVNULL)

    def calls(self) -> list[str]:
        return self.log.read_text().splitlines()

    def cluster_cli(self, *args: str) -> str:
        return " ".join(["python3", str(self.scripts / "strata_tools" / "cluster_cli.py"), *args])

    # ---- scripts/strata-cluster

    def test_up_without_python_runs_setup_then_the_cli(self):
        out = self.run_entry("strata-cluster", "up", "--port", "3307")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.calls(), ["setup ", self.cluster_cli("up", "--port", "3307")])

    def test_status_without_python_installs_python3_alone(self):
        out = self.run_entry("strata-cluster", "--dir", "/tmp/c", "status")
        self.assertEqual(out.returncode, 0, out.stderr)
        calls = self.calls()
        self.assertEqual(calls[-1], self.cluster_cli("--dir", "/tmp/c", "status"))
        installs = [c for c in calls if c.startswith("apt-get") and " install " in c]
        self.assertEqual(len(installs), 1, calls)
        self.assertTrue(installs[0].endswith(" python3"), installs)
        self.assertFalse(any(c.startswith("setup") for c in calls), calls)

    def test_up_no_setup_without_python_installs_python3_alone(self):
        out = self.run_entry("strata-cluster", "up", "--no-setup")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertFalse(any(c.startswith("setup") for c in self.calls()), self.calls())
        self.assertTrue(any(c.startswith("apt-get") and c.endswith(" python3") for c in self.calls()))
        self.assertEqual(self.calls()[-1], self.cluster_cli("up", "--no-setup"))

    def test_without_python_and_without_root_says_what_to_run(self):
        out = self.run_entry("strata-cluster", "stop", uid=1000)
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(self.calls(), [])
        self.assertIn("needs root", out.stderr)
        self.assertIn("apt-get install python3", out.stderr)

    def test_a_failed_setup_stops_before_python(self):
        out = self.run_entry("strata-cluster", "up", setup_rc=1)
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(self.calls(), ["setup "])
        self.assertIn("scripts/setup failed", out.stderr)

    def test_with_python_nothing_is_installed(self):
        out = self.run_entry("strata-cluster", "up", "--audit", python_installed=True)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.calls(), [self.cluster_cli("up", "--audit")])

    def test_the_real_entry_point_reaches_the_cli(self):
        out = subprocess.run([str(SCRIPTS / "strata-cluster"), "--help"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertIn("usage: strata-cluster", out.stdout)

    # ---- scripts/strata-bench

    @unittest.skipUnless(os.access("/usr/bin/python3", os.X_OK), "strata-bench runs Debian's /usr/bin/python3")
    def test_bench_runs_setup_then_the_command_line(self):
        out = self.run_entry("strata-bench", "quick", "--rounds", "3")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(self.calls(), ["setup --quiet", "bench quick --rounds 3"])

    def test_bench_stops_when_setup_fails(self):
        out = self.run_entry("strata-bench", "quick", setup_rc=1)
        self.assertNotEqual(out.returncode, 0)
        self.assertEqual(self.calls(), ["setup --quiet"])
        self.assertIn("scripts/setup failed", out.stderr)


class SetupProfilesTest(unittest.TestCase):
    def test_profiles_add_to_the_base(self):
        def listed(*args):
            out = subprocess.run([str(SCRIPTS / "setup"), "--list", *args], capture_output=True, text=True, timeout=60)
            self.assertEqual(out.returncode, 0, out.stderr)
            return out.stdout.split()
        base = listed()
        self.assertIn("python3", base)
        for profile, extra in (("--bench", {"linux-perf", "openssh-client", "openssh-server"}),
                               ("--fuzz", {"clang", "libclang-rt-14-dev"})):
            with_profile = listed(profile)
            self.assertEqual(with_profile[:len(base)], base)
            self.assertEqual(set(with_profile) - set(base), extra)

    def test_bad_option_is_one_line(self):
        out = subprocess.run([str(SCRIPTS / "setup"), "--nope"], capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 1)
        self.assertEqual(out.stderr.strip().splitlines(),
                         ["error: usage: scripts/setup [--bench] [--fuzz] [--list] [--quiet]"])


if __name__ == "__main__":
    unittest.main()
