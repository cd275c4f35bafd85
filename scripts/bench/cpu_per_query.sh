#!/bin/bash
# mysqld CPU time per query for one sysbench run against a running server:
# less sensitive to other load on the machine than QPS, because it counts
# only the server's own CPU (utime + stime of the process, all threads).
#
#   scripts/bench/cpu_per_query.sh PORT MYSQLD_PID SCRIPT THREADS EVENTS [TABLES ROWS]
#   e.g. scripts/bench/cpu_per_query.sh 13307 $(pgrep -f my.cnf-of-it) oltp_point_select 16 200000 10 25000
set -eu
# shellcheck disable=SC2043 # a list of one: every bench script names its tools in this shape, which test_tools.py reads
for p in sysbench; do  # scripts/bench/tools.py: what installs each
  command -v "$p" >/dev/null || { echo "error: $p is not installed here; scripts/setup --bench installs it" >&2; exit 1; }
done
port=$1 pid=$2 script=$3 threads=$4 events=$5 tables=${6:-10} rows=${7:-25000}
cpu() { awk '{print $14 + $15}' "/proc/$pid/stat"; }
t0=$(cpu)
out=$(sysbench "$script" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
  --mysql-db=sbtest --tables="$tables" --table-size="$rows" --threads="$threads" --events="$events" --time=0 \
  --skip_trx=on run 2>&1) || { echo "$out" >&2; exit 1; }
t1=$(cpu)
queries=$(awk '/queries:/{print $2; exit}' <<<"$out")
qps=$(awk '/queries:/{gsub(/\(/, "", $3); print $3; exit}' <<<"$out")
hz=$(getconf CLK_TCK)
awk -v s="$script" -v t="$threads" -v q="$queries" -v qps="$qps" -v d=$((t1 - t0)) -v hz="$hz" \
  'BEGIN { printf "%s threads=%s queries=%s qps=%s mysqld_cpu_s=%.2f us_per_query=%.1f\n", s, t, q, qps, d / hz, d / hz / q * 1e6 }'
