# Shared shell helpers for the scripts in this folder. Source it; do not run it.
# shellcheck shell=bash
#
# Layout (all build output lives under .build/ inside the checkout, so that the
# relative paths between sources and build directories are the same in every
# clone, which is what lets ccache hit across fresh clones; see docs/BUILDING.md):
#   .build/stock/src    pristine upstream tree (also the stock twin's source)
#   .build/stock/build  stock twin build directory
#   .build/fork/src     prepared tree: pristine + patches/series + overlay symlinks
#   .build/fork/state   what was applied to the prepared tree (for check/export)
#   .build/fork/build   the fork's server build directory
#   .build/top          the top-level CMake build (our components, tests)

set -o pipefail

STRATA_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
STRATA_BUILD=$STRATA_ROOT/.build
STRATA_CACHE_DIR=${STRATA_CACHE_DIR:-$HOME/.cache/strata}
# shellcheck disable=SC2034 # used by the scripts that source this file
PRISTINE_TREE=$STRATA_BUILD/stock/src
# shellcheck disable=SC2034 # used by the scripts that source this file
FORK_TREE=$STRATA_BUILD/fork/src
# shellcheck disable=SC2034 # used by the scripts that source this file
FORK_STATE=$STRATA_BUILD/fork/state

# Top-level folders of the repo that are overlaid into the upstream tree.
# Everything else in the repo (scripts/, rdma/, logservice/, docs/, cmake/) is ours
# alone and never enters the MySQL tree.
OVERLAY_ROOTS=(sql storage plugin mysql-test include components client)

# shellcheck source=upstream.env
. "$STRATA_ROOT/scripts/upstream.env"

die() { echo "error: $*" >&2; exit 1; }
note() { echo "-- $*" >&2; }

# Install Debian packages from the machine's apt sources, as root or through
# sudo; without either, say what to run as root. apt_install PKG...
apt_install() {
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || die "installing $* needs root (or sudo): run as root, or apt-get install $*"
    sudo=(sudo)
  fi
  note "installing $*"
  "${sudo[@]}" apt-get update -qq || die "apt-get update failed; check the machine's apt sources and network"
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
    die "apt-get install failed for: $*"
}

# Refuse early, with the numbers, when a step that writes GBs would run the
# disk full half-way (a half-copied tree or a ninja run dying on ENOSPC says
# much less). require_free_gib DIR GIB WHAT
require_free_gib() {
  local avail
  avail=$(df --output=avail -B1G "$1" 2>/dev/null | tail -1 | tr -d ' ')
  [ -n "$avail" ] || return 0
  [ "$avail" -ge "$2" ] ||
    die "$3 needs about $2 GB free in $1, only $avail GB are (df -h $1; benchmark data under $STRATA_BUILD/bench can go: scripts/strata-bench and scripts/strata-bench replication prepare it again)"
}

# The tarball's cached location (or the override given by the user).
upstream_tarball_path() {
  if [ -n "${STRATA_UPSTREAM_TARBALL:-}" ]; then
    echo "$STRATA_UPSTREAM_TARBALL"
  else
    echo "$STRATA_CACHE_DIR/$UPSTREAM_TARBALL"
  fi
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# Every file of ours that is overlaid into the upstream tree, relative to the
# repo root: tracked files plus untracked ones git does not ignore, so a new
# file shows up in the tree before it is committed.
overlay_files() {
  (cd "$STRATA_ROOT" &&
    if git rev-parse --git-dir >/dev/null 2>&1; then
      git ls-files --cached --others --exclude-standard -- "${OVERLAY_ROOTS[@]}" |
        while read -r f; do if [ -f "$f" ]; then echo "$f"; fi; done
    else
      find "${OVERLAY_ROOTS[@]}" -type f 2>/dev/null
    fi | LC_ALL=C sort -u)
}

# Paths (relative to the tree) that a patch file creates or modifies.
patch_targets() {
  sed -n 's#^+++ b/\([^[:space:]]*\).*#\1#p' "$1"
}

# The series as file paths, in order, comments and blank lines skipped.
series_patches() {
  [ -f "$STRATA_ROOT/patches/series" ] || return 0
  sed -e 's/#.*//' -e 's/[[:space:]]*$//' "$STRATA_ROOT/patches/series" |
    while read -r p; do if [ -n "$p" ]; then echo "$STRATA_ROOT/patches/$p"; fi; done
}

# ccache, as scripts/ccache-launcher runs it.
strata_ccache() {
  CCACHE_DIR="${STRATA_CCACHE_DIR:-$HOME/.cache/strata/ccache}" ccache "$@"
}
ccache_zero_stats() { strata_ccache --zero-stats >/dev/null 2>&1 || true; }
# "N hits, N misses (N%)" since the last ccache_zero_stats.
ccache_stats_line() {
  strata_ccache --print-stats 2>/dev/null | awk '
    $1 == "direct_cache_hit" || $1 == "preprocessed_cache_hit" { h += $2 }
    $1 == "cache_miss" { m += $2 }
    END { t = h + m; printf "%d hits, %d misses (%d%% hits)", h, m, t ? 100 * h / t : 0 }'
}
