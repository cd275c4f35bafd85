# The prepared upstream trees: pristine extraction, patch series, overlay.
# Sourced by scripts/prepare and scripts/patches (after lib.sh).
# shellcheck shell=bash
#
# Invariants the functions below keep:
# - .build/stock/src is the tarball as shipped; nothing writes into it after
#   extraction, so it is the base every diff is taken against.
# - .build/fork/state/expected/<path> holds, for every file the series touches,
#   the content the series produces; a file of the prepared tree that differs
#   from it (or, if the series does not touch it, from pristine) is an edit that
#   has not been exported.
# - A series that fails to apply leaves the prepared tree as it was: patches are
#   applied in a scratch folder first, and only changed files are copied in, so
#   ninja rebuilds exactly what a patch change affects.

PRISTINE_MARK=.strata-pristine

prepare_pristine() {
  if [ -f "$PRISTINE_TREE/$PRISTINE_MARK" ] &&
     [ "$(cat "$PRISTINE_TREE/$PRISTINE_MARK")" = "$UPSTREAM_SHA256" ]; then
    return 0
  fi
  local tarball tmp
  tarball=$("$STRATA_ROOT/scripts/fetch-upstream") || exit 1
  tmp=$STRATA_BUILD/stock/src.extracting.$$
  { rm -rf "$tmp" && mkdir -p "$tmp"; } || die "cannot create $tmp"
  note "extracting $UPSTREAM_TARBALL into $PRISTINE_TREE"
  if ! tar -xzf "$tarball" -C "$tmp" || [ ! -d "$tmp/$UPSTREAM_TOPDIR" ]; then
    rm -rf "$tmp"
    die "extracting $tarball failed (disk full? see df -h $STRATA_BUILD); nothing was left behind, run again when fixed"
  fi
  echo "$UPSTREAM_SHA256" >"$tmp/$UPSTREAM_TOPDIR/$PRISTINE_MARK"
  rm -rf "$PRISTINE_TREE"
  mv "$tmp/$UPSTREAM_TOPDIR" "$PRISTINE_TREE" && rmdir "$tmp"
}

# Lines "M path" (edited upstream file) and "A path" (file that is neither
# upstream's nor the overlay's) for the prepared tree's unexported edits.
tree_edits() {
  [ -f "$FORK_STATE/prepared" ] || return 0
  local f base
  (cd "$FORK_TREE" && find . -type f -newer "$FORK_STATE/prepared" -printf '%P\n') |
    LC_ALL=C sort | while read -r f; do
      if [ -f "$FORK_STATE/expected/$f" ]; then base=$FORK_STATE/expected/$f
      elif [ -f "$PRISTINE_TREE/$f" ]; then base=$PRISTINE_TREE/$f
      else echo "A $f"; continue; fi
      cmp -s "$base" "$FORK_TREE/$f" || echo "M $f"
    done
  # A file the series produces that was deleted from the tree.
  if [ -d "$FORK_STATE/expected" ]; then
    (cd "$FORK_STATE/expected" && find . -type f -printf '%P\n') | while read -r f; do
      [ -e "$FORK_TREE/$f" ] || echo "D $f"
    done
  fi
}

# The files the current series touches, one per line, sorted and unique.
series_targets() {
  local p
  series_patches | while read -r p; do
    [ -f "$p" ] || die "patches/series names $(basename "$p"), which does not exist"
    patch_targets "$p"
  done | LC_ALL=C sort -u
}

# Apply the series to copies of the files it touches, in $1 (a scratch dir).
apply_series_to_scratch() {
  local scratch=$1 f p
  rm -rf "$scratch" && mkdir -p "$scratch"
  series_targets >"$scratch.targets" || exit 1
  while read -r f; do
    if [ -f "$PRISTINE_TREE/$f" ]; then
      mkdir -p "$scratch/$(dirname "$f")" && cp -p "$PRISTINE_TREE/$f" "$scratch/$f"
    fi
  done <"$scratch.targets"
  while read -r p; do
    if ! out=$(patch -d "$scratch" -p1 --batch --forward --fuzz=0 --no-backup-if-mismatch -r - <"$p" 2>&1); then
      # shellcheck disable=SC2001 # sed indents every line; ${var//} cannot anchor at each line
      echo "$out" | sed 's/^/   /' >&2
      die "patch $(basename "$p") does not apply to upstream $UPSTREAM_VERSION; fix it (see docs/PATCHES.md) and run again"
    fi
  done < <(series_patches)
}

# Bring the prepared tree to pristine + series, touching only changed files.
sync_patched_files() {
  local scratch=$STRATA_BUILD/fork/scratch f
  apply_series_to_scratch "$scratch"
  local old_targets=$FORK_STATE/targets
  [ -f "$old_targets" ] || : >"$old_targets"
  # Files the previous series touched and the new one does not: back to pristine.
  LC_ALL=C comm -23 "$old_targets" "$scratch.targets" | while read -r f; do
    if [ -f "$PRISTINE_TREE/$f" ]; then
      cmp -s "$PRISTINE_TREE/$f" "$FORK_TREE/$f" || cp "$PRISTINE_TREE/$f" "$FORK_TREE/$f"
    else
      rm -f "$FORK_TREE/$f"
    fi
  done
  while read -r f; do
    if [ -f "$scratch/$f" ]; then
      if ! cmp -s "$scratch/$f" "$FORK_TREE/$f"; then
        mkdir -p "$FORK_TREE/$(dirname "$f")"
        rm -f "$FORK_TREE/$f" && cp "$scratch/$f" "$FORK_TREE/$f"
      fi
    else
      rm -f "$FORK_TREE/$f"   # the series deletes it
    fi
  done <"$scratch.targets"
  rm -rf "$FORK_STATE/expected" && mkdir -p "$FORK_STATE/expected"
  cp -a "$scratch/." "$FORK_STATE/expected/"
  mv "$scratch.targets" "$old_targets"
  rm -rf "$scratch"
}

series_fingerprint() {
  { echo "$UPSTREAM_SHA256"; series_patches | while read -r p; do
      echo "== $(basename "$p")"; cat "$p"; done; } | sha256sum | cut -d' ' -f1
}

# Symlink every overlay file into the prepared tree; remove links of files that
# left the repo.
sync_overlay() {
  local list=$FORK_STATE/overlay.list new=$FORK_STATE/overlay.list.new f
  overlay_files >"$new"
  # shellcheck disable=SC2094 # the list is removed only on the way out, by die
  while read -r f; do
    if [ -e "$PRISTINE_TREE/$f" ]; then
      rm -f "$new"
      die "overlay file $f has the path of an upstream file; change upstream files through patches/ (docs/PATCHES.md), not by overlay"
    fi
    if [ ! -L "$FORK_TREE/$f" ] || [ "$(readlink -f "$FORK_TREE/$f")" != "$STRATA_ROOT/$f" ]; then
      mkdir -p "$FORK_TREE/$(dirname "$f")"
      rm -rf "${FORK_TREE:?}/$f"
      ln -sr "$STRATA_ROOT/$f" "$FORK_TREE/$f"
    fi
  done <"$new"
  if [ -f "$list" ]; then
    LC_ALL=C comm -23 "$list" "$new" | while read -r f; do
      if [ -L "$FORK_TREE/$f" ]; then
        rm -f "$FORK_TREE/$f"
        rmdir -p --ignore-fail-on-non-empty "$(dirname "$FORK_TREE/$f")" 2>/dev/null || true
      fi
    done
  fi
  mv "$new" "$list"
}

prepare_fork() {
  prepare_pristine
  mkdir -p "$FORK_STATE"
  local want have=""
  want=$(series_fingerprint)
  [ -f "$FORK_STATE/fingerprint" ] && have=$(cat "$FORK_STATE/fingerprint")
  if [ ! -f "$FORK_TREE/$PRISTINE_MARK" ] ||
     [ "$(cat "$FORK_TREE/$PRISTINE_MARK")" != "$UPSTREAM_SHA256" ]; then
    note "copying the pristine tree to $FORK_TREE"
    local tmp=$STRATA_BUILD/fork/src.copying.$$
    rm -rf "$tmp"
    cp -a "$PRISTINE_TREE" "$tmp" || { rm -rf "$tmp"; die "copying the pristine tree failed (disk full? see df -h $STRATA_BUILD)"; }
    rm -rf "$FORK_TREE" "$FORK_STATE" && mkdir -p "$FORK_STATE"
    mv "$tmp" "$FORK_TREE"
    have=""
  fi
  if [ "$want" != "$have" ]; then
    if [ -n "$have" ]; then
      local edits
      edits=$(tree_edits)
      if [ -n "$edits" ]; then
        # shellcheck disable=SC2001 # sed indents every line; ${var//} cannot anchor at each line
        echo "$edits" | sed 's/^/   /' >&2
        die "the prepared tree has edits not exported to patches/; run scripts/patches export (or scripts/patches reset to drop them) before the series changes"
      fi
    fi
    note "applying patches/series ($(series_patches | wc -l) patches)"
    sync_patched_files
    echo "$want" >"$FORK_STATE/fingerprint"
    # The stamp marks "the tree equals pristine + series"; only moving it here
    # (and in export) keeps older unexported edits visible to tree_edits.
    touch "$FORK_STATE/prepared"
  fi
  sync_overlay
}
