#!/bin/bash
# Fork with local redo vs the same fork with redo in a dir:// volume (same disk),
# sysbench oltp_write_only, innodb_flush_log_at_trx_commit=1, --skip-log-bin.
# Usage: storage/innobase/strata/bench/dir_vs_local.sh   (T=seconds per run, default 20)
# Needs the fork built (scripts/build-server fork) and sysbench.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../../../.." && pwd)
B=$ROOT/.build/fork/build/runtime_output_directory
W=${STRATA_BENCH_DIR:-$ROOT/.build/redo-bench}
mkdir -p "$W"
start() { # name port extra...
  local n=$1 p=$2; shift 2
  rm -rf $W/$n; mkdir -p $W/$n
  $B/mysqld --no-defaults --user=root --datadir=$W/$n/dd --initialize-insecure "$@" > $W/$n/init.log 2>&1 || { echo "init $n failed"; tail $W/$n/init.log; exit 1; }
  $B/mysqld --no-defaults --user=root --datadir=$W/$n/dd --port=$p --socket=$W/$n/sock --skip-log-bin \
    --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=1G --max-connections=200 "$@" > $W/$n/err.log 2>&1 &
  for i in $(seq 60); do $B/mysqladmin -uroot --socket=$W/$n/sock ping >/dev/null 2>&1 && break; sleep 1; done
  $B/mysql -uroot --socket=$W/$n/sock -e "CREATE DATABASE sbtest"
}
stop() { $B/mysqladmin -uroot --socket=$W/$1/sock shutdown; sleep 2; }
sb() { # name threads
  sysbench oltp_write_only --mysql-socket=$W/$1/sock --mysql-user=root --tables=4 --table-size=10000 --threads=$2 --time=${T:-20} --report-interval=0 --percentile=95 run 2>&1 \
    | awk -v n=$1 -v t=$2 '/queries:/ {q=$3} /transactions:/ {tps=$3; gsub(/\(/, "", tps)} /95th percentile/ {p=$3} END {printf "%-6s threads=%-3s tps=%-8s p95_ms=%s\n", n, t, tps, p}'
}
for cfg in local volume; do
  if [ $cfg = local ]; then start local 33061; else start volume 33062 --innodb-log-service-addresses=dir://$W/volume/vol; fi
  sysbench oltp_write_only --mysql-socket=$W/$cfg/sock --mysql-user=root --tables=4 --table-size=10000 prepare >/dev/null 2>&1
  for t in 1 16 64; do sb $cfg $t; done
  stop $cfg
done
