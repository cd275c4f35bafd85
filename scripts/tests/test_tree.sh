#!/usr/bin/env bash
# Tests of fetch-upstream, prepare and the patch workflow, on a tiny fake
# upstream tarball in a scratch copy of the repo's scripts (nothing touches the
# real .build/ or the cache). Prints "N passed, N failed" and exits non-zero on
# any failure.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
server=  # pid of the test's http server, once started
trap '[ -z "$server" ] || kill "$server"; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
passed=0 failed=0

ok() { passed=$((passed + 1)); echo "ok   $1"; }
# shellcheck disable=SC2001 # sed indents every line of the output; ${var//} cannot anchor at each line
fail() { failed=$((failed + 1)); echo "FAIL $1"; [ -n "${2:-}" ] && echo "$2" | sed 's/^/     /'; }
expect() {  # expect NAME COMMAND... : command succeeds
  local name=$1; shift
  local out; if out=$("$@" 2>&1); then ok "$name"; else fail "$name" "$out"; fi
}
expect_fail() {  # expect_fail NAME PATTERN COMMAND... : fails, and says PATTERN
  local name=$1 pattern=$2; shift 2
  local out
  if out=$("$@" 2>&1); then fail "$name (it succeeded)" "$out"
  elif ! grep -q -- "$pattern" <<<"$out"; then fail "$name (no '$pattern' in the output)" "$out"
  else ok "$name"; fi
}

# --- a fake upstream release and a fake repo around a copy of our scripts ---
mkdir -p "$work/up/fake-1.0/lib" "$work/repo/scripts" "$work/repo/patches" "$work/repo/sql/ours"
printf 'int a(void) { return 1; }\n' >"$work/up/fake-1.0/a.c"
printf '#define C 1\n' >"$work/up/fake-1.0/lib/c.h"
printf 'project(fake)\n' >"$work/up/fake-1.0/CMakeLists.txt"
tar -czf "$work/fake.tar.gz" -C "$work/up" fake-1.0
cp "$here"/{lib.sh,tree.sh,prepare,patches,fetch-upstream} "$work/repo/scripts/"
cat >"$work/repo/scripts/upstream.env" <<EOF
UPSTREAM_PACKAGE=fake
UPSTREAM_VERSION=1.0
UPSTREAM_TARBALL=fake.tar.gz
UPSTREAM_SHA256=$(sha256sum "$work/fake.tar.gz" | cut -d' ' -f1)
UPSTREAM_SIZE=$(stat -c %s "$work/fake.tar.gz")
UPSTREAM_TOPDIR=fake-1.0
EOF
printf '/.build/\n' >"$work/repo/.gitignore"
printf '/* ours */\n' >"$work/repo/sql/ours/ours.h"
cat >"$work/repo/patches/0001-a-returns-two.patch" <<'EOF'
Why: a() must return 2 for the test.

--- a/a.c
+++ b/a.c
@@ -1 +1 @@
-int a(void) { return 1; }
+int a(void) { return 2; }
EOF
echo 0001-a-returns-two.patch >"$work/repo/patches/series"
(cd "$work/repo" && git init -q && git add -A && git -c user.email=t@t -c user.name=t commit -qm init)
export STRATA_CACHE_DIR=$work/cache
repo=$work/repo
fork=$repo/.build/fork/src
pristine=$repo/.build/stock/src

# --- fetch: verification and the override ---
printf 'not the tarball' >"$work/wrong.tar.gz"
expect_fail "a wrong override tarball is refused by checksum" "sha256" \
  env STRATA_UPSTREAM_TARBALL="$work/wrong.tar.gz" "$repo/scripts/prepare"
if [ ! -e "$pristine" ]; then ok "no tree is left after a refused tarball"; else fail "no tree is left after a refused tarball"; fi
expect_fail "a missing override tarball is a clear error" "does not exist" \
  env STRATA_UPSTREAM_TARBALL="$work/nope.tar.gz" "$repo/scripts/fetch-upstream"

# --- fetch from the apt mirror the machine names (a file:// mirror here) ---
mkdir -p "$work/apt/sources.list.d" "$work/mirror/pool/main/f/fake"
expect_fail "no apt source is a clear error" "no 'deb' entry" env STRATA_APT_ETC="$work/apt" "$repo/scripts/fetch-upstream"
cat >"$work/apt/sources.list.d/debian.sources" <<EOF
Types: deb-src
URIs: file://$work/nowhere
Suites: bookworm
Components: main

Types: deb
URIs: file://$work/mirror
Suites: bookworm
Components: main
EOF
expect_fail "an unreachable mirror is a clear error" "could not download" env STRATA_APT_ETC="$work/apt" "$repo/scripts/fetch-upstream"
printf 'tampered' >"$work/mirror/pool/main/f/fake/fake.tar.gz"
expect_fail "a mirror serving another file is refused" "does not match the pinned sha256" env STRATA_APT_ETC="$work/apt" "$repo/scripts/fetch-upstream"
if [ -z "$(ls "$work/cache" 2>/dev/null)" ]; then ok "a refused download leaves nothing in the cache"; else fail "a refused download leaves nothing in the cache" "$(ls "$work/cache")"; fi
cp "$work/fake.tar.gz" "$work/mirror/pool/main/f/fake/fake.tar.gz"
expect "the tarball downloads from the mirror in the apt sources" env STRATA_APT_ETC="$work/apt" "$repo/scripts/fetch-upstream"
if cmp -s "$work/cache/fake.tar.gz" "$work/fake.tar.gz"; then ok "the verified tarball is cached"; else fail "the verified tarball is cached"; fi
rm -f "$work/cache/fake.tar.gz"

# --- fetch: each form an apt source can take ---
# Every case writes a fresh /etc/apt at $work/etc. Next to the good mirror, a
# poisoned one serves a wrong tarball: fetch stops at the first mirror that has
# the file, so reaching the poison shows a source read or ordered wrongly.
mkdir -p "$work/poison/pool/main/f/fake" "$work/bin"
printf 'poisoned' >"$work/poison/pool/main/f/fake/fake.tar.gz"
good=file://$work/mirror poison=file://$work/poison nowhere=file://$work/nowhere
# curl that logs each call, so a test can tell what was never handed to it.
printf '#!/bin/sh\nprintf "%%s\\n" "$*" >>"%s"\nexec %s "$@"\n' "$work/curl.log" "$(command -v curl)" >"$work/bin/curl"
chmod +x "$work/bin/curl"
new_etc() { rm -rf "${work:?}/etc" "$work/curl.log" "$work/cache/fake.tar.gz"; mkdir -p "$work/etc/sources.list.d"; }
fetch() { PATH=$work/bin:$PATH STRATA_APT_ETC=$work/etc no_proxy=127.0.0.1 NO_PROXY=127.0.0.1 "$repo/scripts/fetch-upstream"; }
fetches_from() {  # fetches_from NAME MIRROR : fetch succeeds and took the tarball from MIRROR
  local name=$1 want=$2 out
  if ! out=$(fetch 2>&1); then fail "$name" "$out"
  elif [ "$(sed -n 's/^-- fetching fake.tar.gz from the apt mirror //p' <<<"$out" | tail -1)" != "$want" ]; then
    fail "$name (not from $want)" "$out"
  elif ! cmp -s "$work/cache/fake.tar.gz" "$work/fake.tar.gz"; then fail "$name (nothing cached)" "$out"
  else ok "$name"; fi
}
never_curled() {  # never_curled NAME TEXT : no curl call was given TEXT
  if grep -qF -- "$2" "$work/curl.log" 2>/dev/null; then fail "$1" "$(cat "$work/curl.log")"; else ok "$1"; fi
}

new_etc
cat >"$work/etc/sources.list" <<EOF
# a third-party style entry: several options, a trailing comment

deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] $good bookworm main  # the local mirror
EOF
fetches_from "one-line: the URI after several [options]" "$good"
new_etc
printf 'deb [ arch=amd64,arm64  lang=none ]\t%s bookworm main\n' "$good" >"$work/etc/sources.list"
fetches_from "one-line: [ options ] with blanks inside the brackets" "$good"
new_etc
cat >"$work/etc/sources.list" <<EOF
#deb $poison bookworm main
  # deb [arch=amd64] $poison bookworm main
deb-src $good bookworm main # deb $poison bookworm main
EOF
fetches_from "one-line: commented-out entries and trailing comments are not read" "$good"
new_etc
echo "deb copy:$work/mirror bookworm main" >"$work/etc/sources.list"
fetches_from "one-line: a copy: path is fetched as a file" "$good"

new_etc
cat >"$work/etc/sources.list.d/debian.sources" <<EOF
TYPES: deb
Uris: $nowhere
  $good
suites: bookworm
COMPONENTS: main
EOF
fetches_from "deb822: field names in any case, URIs continued on the next line" "$good"
new_etc
cat >"$work/etc/sources.list.d/debian.sources" <<EOF
# a disabled stanza is not read, whatever it names
Types: deb
URIs: $poison
Enabled: false
Suites: bookworm

Types: deb-src
# URIs: $poison
URIs: $nowhere $good
Suites: bookworm
Components: main

Types: deb deb-src
URIs: $poison
Suites: bookworm
EOF
fetches_from "deb822: a disabled stanza skipped, stanzas and URIs in order, deb-src used" "$good"

new_etc
echo "# nothing here" >"$work/etc/sources.list"
echo "deb $good bookworm main" >"$work/etc/sources.list.d/10-good.list"
printf 'Types: deb\nURIs: %s\nSuites: bookworm\n' "$poison" >"$work/etc/sources.list.d/20-poison.sources"
echo "deb $poison bookworm main" >"$work/etc/sources.list.d/00 copy.list"
fetches_from "sources.list.d in name order whatever the format; names apt skips are not read" "$good"

new_etc
printf '# tried by priority, lowest first; no priority is last\n%s\tpriority:5\n%s\tpriority:1 type:deb\n\n%s\tpriority:2  arch:amd64\nhttp://mirror.invalid/debian\n' \
  "$poison" "$nowhere" "$good" >"$work/etc/mirrors.txt"
echo "deb mirror+file:$work/etc/mirrors.txt bookworm main" >"$work/etc/sources.list"
fetches_from "mirror+file: the mirrors its list names, by priority (comments, tab metadata)" "$good"

if command -v python3 >/dev/null; then
  python3 -u -m http.server 0 --bind 127.0.0.1 --directory "$work" >"$work/http.out" 2>/dev/null &
  server=$!
  for _ in $(seq 50); do grep -q 'port [0-9]' "$work/http.out" && break; sleep 0.1; done
  web=http://127.0.0.1:$(sed -n 's/.* port \([0-9]*\).*/\1/p' "$work/http.out" | head -1)
  # A list fetched over the network may not name local files (apt's rule).
  printf '%s\n%s/mirror\n' "$poison" "$web" >"$work/list.txt"
  new_etc
  echo "deb mirror+$web/list.txt bookworm main" >"$work/etc/sources.list"
  fetches_from "mirror+http: the list is downloaded and only its network mirrors used" "$web/mirror"
  new_etc
  echo "deb mirror://${web#http://}/list.txt bookworm main" >"$work/etc/sources.list"
  fetches_from "mirror:// is mirror+http" "$web/mirror"
  kill "$server"; server=
else
  fail "mirror+http tests: no python3 to serve the list (scripts/setup installs it)"
fi

cdrom='cdrom:[Debian GNU/Linux 12.5.0 _Bookworm_ - Official amd64 DVD Binary-1 20240210-11:28]/'
new_etc
echo "deb $cdrom bookworm contrib main" >"$work/etc/sources.list"
if out=$(fetch 2>&1); then fail "cdrom only: refused (it succeeded)" "$out"
elif [ "$(wc -l <<<"$out")" = 1 ] && grep -qF -- "$cdrom" <<<"$out" && grep -q 'STRATA_UPSTREAM_TARBALL' <<<"$out" &&
     grep -q 'http(s) or file:' <<<"$out"; then
  ok "cdrom only: refused in one line naming the entry and what to set"
else fail "cdrom only: refused in one line naming the entry and what to set" "$out"; fi
never_curled "cdrom only: curl is not called" "cdrom:"
new_etc
printf 'deb %s bookworm main\ndeb tor+http://mirror.invalid/debian bookworm main\ndeb %s bookworm main\n' \
  "$cdrom" "$good" >"$work/etc/sources.list"
fetches_from "unusable entries first (cdrom, tor+http), a usable one later: it downloads" "$good"
never_curled "the unusable entries are never handed to curl" "cdrom:"
never_curled "nor the tor+http one" "tor+http"
rm -f "$work/cache/fake.tar.gz"
export STRATA_UPSTREAM_TARBALL=$work/fake.tar.gz

# --- prepare: patches, overlay, idempotence ---
expect "prepare builds the fork tree" "$repo/scripts/prepare"
if grep -q 'return 2' "$fork/a.c"; then ok "the series is applied"; else fail "the series is applied"; fi
if grep -q 'return 1' "$pristine/a.c"; then ok "the pristine tree stays pristine"; else fail "the pristine tree stays pristine"; fi
if [ -L "$fork/sql/ours/ours.h" ] && [ "$(cat "$fork/sql/ours/ours.h")" = "/* ours */" ]; then
  ok "overlay files are linked into the tree"; else fail "overlay files are linked into the tree"; fi
before=$(stat -c %Y.%Z "$fork/a.c")
sleep 1.1
expect "prepare again is a no-op" "$repo/scripts/prepare"
if [ "$(stat -c %Y.%Z "$fork/a.c")" = "$before" ]; then ok "an unchanged series rewrites no file"; else fail "an unchanged series rewrites no file"; fi
expect "check is clean after apply" "$repo/scripts/patches" check
expect "verify applies the series without touching the tree" "$repo/scripts/patches" verify

# --- check/export for a file a patch owns ---
printf 'int a(void) { return 3; }\n' >"$fork/a.c"
expect_fail "check reports an edit" "M a.c" "$repo/scripts/patches" check
expect "export writes the edit into the owning patch" "$repo/scripts/patches" export
if grep -q '^+int a(void) { return 3; }' "$repo/patches/0001-a-returns-two.patch"; then ok "the patch holds the edit"; else fail "the patch holds the edit"; fi
if grep -q '^Why: a() must return 2' "$repo/patches/0001-a-returns-two.patch"; then ok "export keeps the patch's header"; else fail "export keeps the patch's header"; fi
expect "check is clean after export" "$repo/scripts/patches" check

# --- a file no patch owns ---
printf '#define C 2\n' >"$fork/lib/c.h"
expect_fail "export of an unowned file asks for --new" "export --new" "$repo/scripts/patches" export
expect_fail "--new without --why is refused" "needs --why" "$repo/scripts/patches" export --new c-two
expect "export --new creates a patch" "$repo/scripts/patches" export --new c-two --why "C must be 2"
if grep -qx '0002-c-two.patch' "$repo/patches/series"; then ok "the new patch is in the series"; else fail "the new patch is in the series"; fi
expect "check is clean after export --new" "$repo/scripts/patches" check

# --- an export limited to some paths leaves the other edits alone ---
printf 'int a(void) { return 4; }\n' >"$fork/a.c"
printf '#define C 5\n' >"$fork/lib/c.h"
expect "export of one path" "$repo/scripts/patches" export lib/c.h
if grep -q '^+#define C 5' "$repo/patches/0002-c-two.patch"; then ok "the named path is exported"; else fail "the named path is exported"; fi
if grep -q '^+int a(void) { return 4; }' "$repo/patches/0001-a-returns-two.patch"; then fail "an unnamed path is left alone"; else ok "an unnamed path is left alone"; fi
expect_fail "the unnamed edit is still reported" "M a.c" "$repo/scripts/patches" check
expect "then exporting it too" "$repo/scripts/patches" export "$fork/a.c"
expect "check is clean after both" "$repo/scripts/patches" check

# --- new files belong in the overlay ---
printf 'x\n' >"$fork/lib/new.c"
expect_fail "check reports a file that is in neither upstream nor overlay" "A lib/new.c" "$repo/scripts/patches" check
expect_fail "export refuses new files" "overlay" "$repo/scripts/patches" export
expect "reset drops unexported edits" "$repo/scripts/patches" reset
if [ ! -e "$fork/lib/new.c" ]; then ok "reset removed the stray file"; else fail "reset removed the stray file"; fi

# --- a fresh tree from the exported series is the same tree ---
cp "$fork/a.c" "$work/a.before"; cp "$fork/lib/c.h" "$work/c.before"
rm -rf "$repo/.build/fork"
expect "apply on a fresh tree" "$repo/scripts/patches" apply
if cmp -s "$fork/a.c" "$work/a.before" && cmp -s "$fork/lib/c.h" "$work/c.before"; then
  ok "a fresh apply reproduces the exported tree"; else fail "a fresh apply reproduces the exported tree"; fi

# --- a series change with unexported edits is refused ---
printf 'int a(void) { return 9; }\n' >"$fork/a.c"
printf '# nothing\n' >>"$repo/patches/series"
echo "0003-extra.patch" >>"$repo/patches/series"
cat >"$repo/patches/0003-extra.patch" <<'EOF'
Why: extra.

--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -1 +1,2 @@
 project(fake)
+# extra
EOF
expect_fail "a series change over unexported edits is refused" "not exported" "$repo/scripts/prepare"
"$repo/scripts/patches" reset >/dev/null 2>&1
expect "the new series applies once the tree is clean" "$repo/scripts/prepare"
if grep -q '# extra' "$fork/CMakeLists.txt"; then ok "the added patch is applied"; else fail "the added patch is applied"; fi

# --- a patch that does not apply names itself and leaves the tree alone ---
cat >"$repo/patches/0003-extra.patch" <<'EOF'
Why: broken on purpose.

--- a/CMakeLists.txt
+++ b/CMakeLists.txt
@@ -1 +1,2 @@
 project(something-else)
+# extra
EOF
expect_fail "a failing patch is named" "0003-extra.patch does not apply" "$repo/scripts/prepare"
if grep -q '# extra' "$fork/CMakeLists.txt" && grep -q 'return 4' "$fork/a.c"; then
  ok "the tree is unchanged after a failing series"; else fail "the tree is unchanged after a failing series"; fi
sed -i '/0003-extra.patch/d' "$repo/patches/series"; rm "$repo/patches/0003-extra.patch"
expect "dropping a patch restores its files" "$repo/scripts/prepare"
if ! grep -q '# extra' "$fork/CMakeLists.txt"; then ok "the dropped patch's file is pristine again"; else fail "the dropped patch's file is pristine again"; fi

# --- the overlay may not shadow upstream files ---
mkdir -p "$repo/sql"; printf 'x\n' >"$repo/sql/shadow.txt"
mkdir -p "$pristine/sql"; printf 'upstream\n' >"$pristine/sql/shadow.txt"
expect_fail "an overlay file with an upstream path is refused" "through patches" "$repo/scripts/prepare"
rm "$repo/sql/shadow.txt"
expect "removing it heals" "$repo/scripts/prepare"

# --- the overlay follows the repo ---
rm "$repo/sql/ours/ours.h"
expect "prepare after an overlay file is removed" "$repo/scripts/prepare"
if [ ! -e "$fork/sql/ours/ours.h" ]; then ok "its link is gone"; else fail "its link is gone"; fi

# --- a step that writes GBs refuses up front when the disk cannot take them ---
expect_fail "too little free disk is refused with the numbers" "needs about 999999 GB free" \
  bash -c ". '$repo/scripts/lib.sh' && require_free_gib '$work' 999999 'a cold build'"
expect "enough free disk passes" bash -c ". '$repo/scripts/lib.sh' && require_free_gib '$work' 0 'a cold build'"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
