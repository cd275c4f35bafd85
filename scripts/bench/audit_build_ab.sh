#!/bin/bash
# Two builds of strata_audit.so compared on one dataset, without the server
# changing between them: the same mysqld and my.cnf are started with
# --plugin-dir pointing at build A or B, in the order A B B A (repeated),
# and each start runs scripts/bench/audit_policy_switch.sh (ALL / NONE every
# 10 s at point select). Prints every run's ALL/NONE windows, then per build
# the median and the mean with its standard error over all its windows.
# Window-to-window spread on a shared VM is about +-10%; 20 or more windows
# per build resolve about a point. See docs/benchmarks/audit-overhead.md.
#
#   scripts/bench/audit_build_ab.sh MY_CNF DIR_A DIR_B REPEATS CYCLES [THREADS [SCRIPT]]
#   e.g. scripts/bench/audit_build_ab.sh .build/bench/data/.../my.cnf /tmp/old /tmp/new 1 10
# Each DIR holds a strata_audit.so (and any other plugin the my.cnf loads).
# The port is the my.cnf's (strata-bench rewrites it at each of its runs).
set -eu
for p in sysbench bc; do  # scripts/bench/tools.py: what installs each
  command -v "$p" >/dev/null || { echo "error: $p is not installed here; scripts/setup --bench installs it" >&2; exit 1; }
done
cnf=$1 dir_a=$2 dir_b=$3 repeats=$4 cycles=$5 threads=${6:-16} script=${7:-oltp_point_select}
port=$(awk -F= '/^[[:space:]]*port[[:space:]]*=/ {gsub(/[[:space:]]/, "", $2); print $2; exit}' "$cnf")
[ -n "$port" ] || { echo "no port = line in $cnf" >&2; exit 1; }
here=$(cd "$(dirname "$0")" && pwd)
mysqld=${MYSQLD:-$here/../../.build/fork/build/bin/mysqld}
mysqladmin=${MYSQLADMIN:-$here/../../.build/fork/build/bin/mysqladmin}
results=$(mktemp) windows=$(mktemp)
trap 'rm -f "$results" "$windows"' EXIT

run_one() {  # label plugin_dir
  "$mysqld" --defaults-file="$cnf" --plugin-dir="$2" >/dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 240); do
    "$mysqladmin" -uroot -h127.0.0.1 -P"$port" ping >/dev/null 2>&1 && break
    kill -0 "$pid" 2>/dev/null || { echo "mysqld with --plugin-dir=$2 exited while starting" >&2; exit 1; }
    sleep 0.5
  done
  "$mysqladmin" -uroot -h127.0.0.1 -P"$port" ping >/dev/null 2>&1 ||
    { echo "mysqld with --plugin-dir=$2 did not answer within 120 s" >&2; kill "$pid"; exit 1; }
  echo "== $1 ($2), mysqld $pid"
  "$here/audit_policy_switch.sh" "$port" "$threads" "$cycles" "$script" >"$windows"
  cat "$windows"
  awk -v b="$1" '/ALL\/NONE/ {print b, $NF}' "$windows" >>"$results"
  "$mysqladmin" -uroot -h127.0.0.1 -P"$port" shutdown
  wait "$pid" || true
}

for _ in $(seq 1 "$repeats"); do
  run_one A "$dir_a"
  run_one B "$dir_b"
  run_one B "$dir_b"
  run_one A "$dir_a"
done

for b in A B; do
  awk -v b="$b" '$1 == b {print $2}' "$results" | sort -n | awk -v b="$b" '
    {v[NR] = $1; s += $1; ss += $1 * $1}
    END {
      if (NR == 0) exit
      m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      mean = s / NR; var = (NR > 1) ? (ss - NR * mean * mean) / (NR - 1) : 0
      printf "build %s: %d windows, ALL/NONE median %.3f, mean %.3f +- %.3f (standard error)\n",
        b, NR, m, mean, sqrt(var / NR)
    }'
done
