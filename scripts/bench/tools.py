"""The programs strata-bench runs that a minimal Debian 12 lacks, and the set-up that installs each.

scripts/setup installs what every subcommand runs; `scripts/setup --bench`
adds the tools of a few (perf for `audit --cycles`, ssh for --client-ssh,
ssh-keygen and sshd for `client-netns`). A subcommand checks for its
programs before it starts anything (`require`), so a missing one is one
line naming the command that installs it, not a traceback half-way.
tests/test_tools.py checks that scripts/setup really lists every package.
"""
import shutil

# program -> (Debian package, the set-up that installs it)
PROGRAMS = {
    "sysbench": ("sysbench", "scripts/setup"),
    "ip": ("iproute2", "scripts/setup"),
    "perf": ("linux-perf", "scripts/setup --bench"),
    "ssh": ("openssh-client", "scripts/setup --bench"),
    "ssh-keygen": ("openssh-client", "scripts/setup --bench"),
    "sshd": ("openssh-server", "scripts/setup --bench"),
}


def missing_message(program: str) -> str:
    package, setup = PROGRAMS[program]
    return f"{program} is not installed here; `{setup}` installs it (Debian's {package})"


def require(*programs: str, which=shutil.which) -> None:
    """Ends the script with one `error:` line when one of `programs` is not on PATH."""
    for program in programs:
        if not which(program):
            raise SystemExit(f"error: {missing_message(program)}")
