#!/bin/bash
# The same fork binary with its redo in three places, one after the other:
#   local  local redo files (as stock MySQL)
#   volume a dir:// volume on the same disk
#   nodes  three logserviced on loopback (TCP, write quorum 2), each on the same disk
# sysbench oltp_write_only, innodb_flush_log_at_trx_commit=1, --skip-log-bin.
# Usage: storage/innobase/strata/bench/redo_targets.sh [local volume nodes]
#   T=seconds per run (default 20), THREADS="1 16 64"
# Needs the fork built (scripts/build-server fork; it builds logserviced too) and sysbench.
set -u
ROOT=$(cd "$(dirname "$(readlink -f "$0")")/../../../.." && pwd)
B=$ROOT/.build/fork/build/runtime_output_directory
W=${STRATA_BENCH_DIR:-$ROOT/.build/redo-bench}
mkdir -p "$W"
start() { # name port extra...
  local n=$1 p=$2; shift 2
  rm -rf "${W:?}/$n"; mkdir -p "$W/$n"
  "$B/mysqld" --no-defaults --user=root --datadir="$W/$n/dd" --initialize-insecure "$@" > "$W/$n/init.log" 2>&1 || { echo "init $n failed"; tail "$W/$n/init.log"; exit 1; }
  "$B/mysqld" --no-defaults --user=root --datadir="$W/$n/dd" --port="$p" --socket="$W/$n/sock" --skip-log-bin \
    --innodb-flush-log-at-trx-commit=1 --innodb-buffer-pool-size=1G --max-connections=200 "$@" > "$W/$n/err.log" 2>&1 &
  for _ in $(seq 60); do "$B/mysqladmin" -uroot --socket="$W/$n/sock" ping >/dev/null 2>&1 && break; sleep 1; done
  "$B/mysql" -uroot --socket="$W/$n/sock" -e "CREATE DATABASE sbtest"
}
stop() { "$B/mysqladmin" -uroot --socket="$W/$1/sock" shutdown; sleep 2; }
NODE_PIDS=()
start_nodes() { # three logserviced in $W/ls; sets ADDRS
  rm -rf "${W:?}/ls"; mkdir -p "$W/ls"
  echo "bench-secret-$$" > "$W/ls/secret"; chmod 600 "$W/ls/secret"
  ADDRS=
  for i in 1 2 3; do
    mkdir -p "$W/ls/n$i"
    "$B/logserviced" --node_id="n$i" --listen=tcp://127.0.0.1:0 --data_dir="$W/ls/n$i" --cluster_id=strata \
      --secret_file="$W/ls/secret" --port_file="$W/ls/n$i.port" > "$W/ls/n$i.log" 2>&1 &
    NODE_PIDS+=($!)
  done
  for i in 1 2 3; do
    for _ in $(seq 100); do [ -s "$W/ls/n$i.port" ] && break; sleep 0.1; done
    ADDRS=$ADDRS${ADDRS:+,}tcp://127.0.0.1:$(cat "$W/ls/n$i.port")
  done
}
stop_nodes() { kill "${NODE_PIDS[@]}" 2>/dev/null; wait "${NODE_PIDS[@]}" 2>/dev/null; NODE_PIDS=(); }
trap stop_nodes EXIT
sb() { # name threads
  sysbench oltp_write_only --mysql-socket="$W/$1/sock" --mysql-user=root --tables=4 --table-size=10000 --threads="$2" --time="${T:-20}" --report-interval=0 --percentile=95 run 2>&1 \
    | awk -v n="$1" -v t="$2" '/queries:/ {q=$3} /transactions:/ {tps=$3; gsub(/\(/, "", tps)} /95th percentile/ {p=$3} END {printf "%-6s threads=%-3s tps=%-8s p95_ms=%s\n", n, t, tps, p}'
}
targets=("$@")
[ $# -gt 0 ] || targets=(local volume nodes)
read -ra threads <<<"${THREADS:-1 16 64}"
for cfg in "${targets[@]}"; do
  case $cfg in
    local) start local 33061 ;;
    volume) start volume 33062 --innodb-log-service-addresses="dir://$W/volume/vol" ;;
    nodes) start_nodes
      start nodes 33063 --innodb-log-service-addresses="$ADDRS" --innodb-log-service-secret-file="$W/ls/secret" ;;
    *) echo "unknown target $cfg (local, volume, nodes)"; exit 1 ;;
  esac
  sysbench oltp_write_only --mysql-socket="$W/$cfg/sock" --mysql-user=root --tables=4 --table-size=10000 prepare >/dev/null 2>&1
  for t in "${threads[@]}"; do sb "$cfg" "$t"; done
  stop "$cfg"
  if [ "$cfg" = nodes ]; then stop_nodes; fi
done
