#!/usr/bin/env bash
# Lint every tracked shell script with shellcheck and every tracked Python file
# with flake8; any finding fails, and so does linting nothing.
#
# Shell scripts: *.sh, *.bash and files whose first line is a bash or sh
# shebang (.ci/run, scripts/test, ...). shellcheck -x follows `. lib.sh` and
# the other sourced files from the sourcing script's folder (-P SCRIPTDIR), at
# its lowest severity (style). Python: *.py and files with a python shebang.
# A finding that is a deliberate pattern is disabled on its line with a reason:
#   # shellcheck disable=SC2086 # word splitting wanted: ...
#   x = f()  # noqa: F841 (why)
# Both linters come from scripts/setup (Debian's shellcheck and flake8).
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 1

missing=()
command -v shellcheck >/dev/null || missing+=(shellcheck)
command -v flake8 >/dev/null || missing+=(flake8)
if [ ${#missing[@]} -gt 0 ]; then
  echo "error: ${missing[*]} not installed; scripts/setup installs what is missing (or: apt-get install ${missing[*]})" >&2
  exit 1
fi

shell_files=() python_files=()
while IFS= read -r -d '' f; do
  { [ -f "$f" ] && [ ! -L "$f" ]; } || continue  # deleted in the work tree, or a link to a file linted as itself
  case $f in
    *.sh | *.bash) shell_files+=("$f"); continue ;;
    *.py) python_files+=("$f"); continue ;;
  esac
  [ "$(LC_ALL=C head -c 2 -- "$f")" = '#!' ] || continue
  first=$(head -n 1 -- "$f")
  case $first in
    *python*) python_files+=("$f") ;;
    *[/\ ]bash | *[/\ ]bash\ * | *[/\ ]sh | *[/\ ]sh\ *) shell_files+=("$f") ;;
  esac
done < <(git ls-files -z)

if [ ${#shell_files[@]} -eq 0 ] || [ ${#python_files[@]} -eq 0 ]; then
  echo "error: found ${#shell_files[@]} shell scripts and ${#python_files[@]} Python files to lint; expected some of each" >&2
  exit 1
fi

# Findings go to stdout one a line (file:line:col: level: message [code]).
sc_out=$(shellcheck -x -P SCRIPTDIR -S style -f gcc -- "${shell_files[@]}" 2>&1); sc_rc=$?
[ -z "$sc_out" ] || echo "$sc_out"
sc_findings=$(grep -c . <<<"$sc_out")
# pycodestyle's 79 columns would flag most lines of code written to 130; the
# longest line in the repo is 130, so that is the limit.
f8_out=$(flake8 --max-line-length=130 -- "${python_files[@]}" 2>&1); f8_rc=$?
[ -z "$f8_out" ] || echo "$f8_out"
f8_findings=$(grep -c . <<<"$f8_out")

echo "lint: shellcheck $(shellcheck --version | sed -n 's/^version: //p') over ${#shell_files[@]} shell scripts: $sc_findings findings"
echo "lint: flake8 $(flake8 --version | sed -n '1s/ .*//p') over ${#python_files[@]} Python files: $f8_findings findings"
# A linter that failed without a finding (a crash, a bad option) fails too.
[ "$sc_rc" -eq 0 ] && [ "$f8_rc" -eq 0 ] && [ "$sc_findings" -eq 0 ] && [ "$f8_findings" -eq 0 ]
