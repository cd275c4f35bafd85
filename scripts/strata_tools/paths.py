"""Where things are: the checkout, its build trees and the binaries in them.

The layout is fixed relative to the checkout (see scripts/lib.sh) because
ccache only hits across clones when those relative paths never change.
"""
import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BUILD = ROOT / ".build"
SCRIPTS = ROOT / "scripts"

# name -> the server build directory of that flavor
SERVER_BUILDS = {
    "fork": BUILD / "fork" / "build",
    "stock": BUILD / "stock" / "build",
}


class MissingBinary(RuntimeError):
    pass


def server_build(flavor: str) -> Path:
    try:
        return SERVER_BUILDS[flavor]
    except KeyError:
        raise ValueError(f"unknown server flavor {flavor!r} (known: {', '.join(SERVER_BUILDS)})")


def binary(build: Path, name: str) -> Path:
    """A program built by the MySQL build (mysqld, mysql, mysqladmin, ...)."""
    for sub in ("runtime_output_directory", "bin"):
        candidate = build / sub / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise MissingBinary(f"{name} is not built in {build}; run scripts/build-server")


def plugin_dir(build: Path) -> Path:
    return build / "plugin_output_directory"
