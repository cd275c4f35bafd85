#!/usr/bin/env python3
"""The repo stands alone: every file or folder it names is in it (tier 1, ctest scripts.docs_links).

- A markdown link to a relative path ([text](path), [text](path#anchor)) names
  a file or folder of the repo and does not climb out of it; absolute paths
  are not links into the repo and are refused too.
- A path of ours written in a markdown file (`scripts/...`, `docs/...`,
  `rdma/...`, ...; backticked or not) exists. Templates (`NAME.md`, `DATE`,
  globs, `$(...)`, `<...>`) are not paths and are skipped.
- No file cites the project's steering documents, which live outside the
  repo, or a folder beside the checkout: a fact they hold is written where it
  is needed, in our own words.

"The repo" is what git tracks plus new files git does not ignore, so a file
is checked before it is committed and .build/ never counts as present.
"""
import os
import re
import subprocess
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SELF = Path(__file__).resolve().relative_to(ROOT).as_posix()

# Top-level folders that hold only our files. sql/, storage/, plugin/ and
# mysql-test/ are overlaid on upstream's tree, where most paths are upstream's;
# of those, only our own subfolders are checked.
OUR_ROOTS = r"(?:scripts|docs|cmake|patches|rdma|logservice|\.ci|plugin/strata_\w+|storage/innobase/strata)"
# A whole path: not glued to more path characters on either side (so no
# partial match of `record_ring.*` or `whitepaper-$(date +%F).md`).
OUR_PATH = re.compile(r"(?<![\w./$<{-])(" + OUR_ROOTS + r"/(?:[\w.-]+/)*[\w.-]*\w/?)(?![\w/*$<>{}-]|\.[\w/*])")
# Names that look like ours but are not: system headers under a folder name we share.
NOT_OURS = {"rdma/rdma_cma.h"}  # librdmacm's header (FIND_PATH in the CMake files), not our rdma/
# A placeholder in a path: an upper-case word of a template, not a file name.
PLACEHOLDER = re.compile(r"(?:^|[/-])(?:NAME|DATE|PAGE|DIR|FILE|PATH|N|X)(?:[./-]|$)")
LINK = re.compile(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# The steering documents and the folder they live in, beside the checkout.
OUTSIDE = re.compile(r"\b(?:ARCHITECTURE|PAGESERVER|BENCHMARK-FACTS|STYLE)\.md\b|\.\./shared\b|/work/shared\b")


def repo_files() -> list[str]:
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
                             capture_output=True, text=True, check=True).stdout
        return sorted({f for f in out.splitlines() if (ROOT / f).is_file()})
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: everything but build output
        found = []
        for d, subdirs, names in os.walk(ROOT):
            subdirs[:] = [s for s in subdirs if s not in (".git", ".build")]
            found += [(Path(d) / n).relative_to(ROOT).as_posix() for n in names]
        return sorted(found)


FILES = repo_files()
PRESENT = set(FILES) | {str(p) for f in FILES for p in Path(f).parents if str(p) != "."}


def present(path: str) -> bool:
    return os.path.normpath(path).rstrip("/") in PRESENT


def text_of(path: str) -> str | None:
    try:
        return (ROOT / path).read_text()
    except (UnicodeDecodeError, OSError):
        return None  # binary (plots) or unreadable: names nothing


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def broken_links(path: str, text: str) -> list[str]:
    """Markdown links of `path` that do not resolve to a file or folder of the repo."""
    bad = []
    folder = os.path.dirname(path)
    for m in LINK.finditer(text):
        target = m.group(1)
        if re.match(r"[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (https:, mailto:) or an anchor in the same page
        where = f"{path}:{line_of(text, m.start())}: ({target})"
        file_part = target.split("#", 1)[0]
        if file_part.startswith("/"):
            bad.append(f"{where} is an absolute path, not a file of the repo")
            continue
        resolved = os.path.normpath(os.path.join(folder, file_part))
        if resolved == ".." or resolved.startswith("../"):
            bad.append(f"{where} points outside the repo")
        elif not present(resolved):
            bad.append(f"{where}: no such file or folder in the repo ({resolved})")
    return bad


def missing_paths(path: str, text: str) -> list[str]:
    """Paths of ours named in markdown text that do not exist (relative to the root or to the page)."""
    bad = []
    for m in OUR_PATH.finditer(text):
        p = m.group(1)
        if PLACEHOLDER.search(p) or p in NOT_OURS:
            continue
        if not present(p) and not present(os.path.join(os.path.dirname(path), p)):
            bad.append(f"{path}:{line_of(text, m.start())}: {p}: no such file or folder in the repo")
    return bad


def outside_refs(path: str, text: str) -> list[str]:
    return [f"{path}:{line_of(text, m.start())}: {m.group(0)} is not in the repo; state the fact where it "
            f"is needed, or point at a doc in the repo" for m in OUTSIDE.finditer(text)]


class DocsLinksTest(unittest.TestCase):
    def check(self, what, files):
        bad = []
        for path in files:
            text = text_of(path)
            if text is not None:
                bad += what(path, text)
        if bad:
            self.fail(f"{len(bad)} reference(s) to nothing in the repo:\n" + "\n".join(bad))

    def test_markdown_links_resolve(self):
        self.check(broken_links, [f for f in FILES if f.endswith(".md")])

    def test_paths_of_ours_exist(self):
        self.check(missing_paths, [f for f in FILES if f != SELF])

    def test_nothing_cites_documents_outside_the_repo(self):
        self.check(outside_refs, [f for f in FILES if f != SELF])

    def test_the_checks_catch_what_they_are_for(self):
        page = "docs/x.md"
        self.assertEqual(len(broken_links(page, "[a](missing.md) [b](../../etc/passwd) [c](/etc/passwd)")), 3)
        self.assertEqual(broken_links(page, "[a](../README.md#the-two-commands) [b](https://x.org/a) [c](#top)"
                                            " [d](../scripts)"), [])
        self.assertEqual(len(missing_paths(page, "run `scripts/no-such-script` and docs/nothere.md")), 2)
        self.assertEqual(missing_paths(page, "`scripts/setup`, `docs/benchmarks/NAME.md`, "
                                             "scripts/bench/*.sh, docs/benchmarks/whitepaper-$(date +%F).md, <rdma/rdma.h>"), [])
        self.assertEqual(len(missing_paths("a.env", "read by cmake/not_there.cmake.")), 1)
        self.assertEqual(len(outside_refs("a.cc", "see ARCHITECTURE.md section 1, ../shared")), 2)


if __name__ == "__main__":
    unittest.main()
