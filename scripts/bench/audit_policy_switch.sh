#!/bin/bash
# Audit cost on one running server, without restarts: a sysbench script
# (oltp_point_select unless SCRIPT names another) runs while audit_log_policy is switched ALL / NONE every 10 s; prints each
# window's QPS (the second 5 s report of the window, so the switch itself is
# outside it) and, per ALL window, its ratio to the NONE windows beside it.
# Server drift between starts stays out of the comparison. See
# docs/benchmarks/audit-overhead.md (2026-11-25 04:55 section).
#
#   scripts/bench/audit_policy_switch.sh PORT THREADS CYCLES [SCRIPT]
#   e.g. scripts/bench/audit_policy_switch.sh 13307 16 6   (130 s)
#        scripts/bench/audit_policy_switch.sh 13307 64 10 oltp_read_write
set -eu
for p in sysbench bc; do  # scripts/bench/tools.py: what installs each
  command -v "$p" >/dev/null || { echo "error: $p is not installed here; scripts/setup --bench installs it" >&2; exit 1; }
done
port=$1 threads=$2 cycles=$3 script=${4:-oltp_point_select}
# Read-only scripts run without BEGIN/COMMIT, as strata-bench's scenarios do;
# read-write keeps its transactions.
case $script in
  oltp_point_select | oltp_read_only) trx_opt=--skip_trx=on ;;
  *) trx_opt= ;;
esac
mysql_cmd() { "${MYSQL:-$(dirname "$0")/../../.build/fork/build/bin/mysql}" -uroot -h127.0.0.1 -P"$port" -N -e "$1"; }
out=$(mktemp)
trap 'rm -f "$out"' EXIT
mysql_cmd "SET GLOBAL audit_log_policy = NONE"
sysbench "$script" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
  --mysql-db=sbtest --tables=10 --table-size=25000 --threads="$threads" $trx_opt \
  --time=$((cycles * 20 + 10)) --report-interval=5 run >"$out" 2>&1 &
sb=$!
start=$(date +%s.%N)
# Window k >= 1 is [10k, 10k + 10) s: ALL for odd k, NONE for even k; window 0 warms up.
for k in $(seq 1 $((cycles * 2))); do
  sleep "$(echo "$start + 10 * $k - $(date +%s.%N)" | bc)"
  if [ $((k % 2)) = 1 ]; then mysql_cmd "SET GLOBAL audit_log_policy = ALL"; else mysql_cmd "SET GLOBAL audit_log_policy = NONE"; fi
done
wait $sb || { cat "$out" >&2; exit 1; }
awk '/^\[ *[0-9]+s \]/{r++; for (i = 1; i <= NF; i++) if ($i == "qps:") q[r] = $(i + 1)}
  END {
    for (k = 1; (2 * k + 2) in q; k++) w[k] = q[2 * k + 2]
    n = k - 1
    for (k = 1; k <= n; k++) {
      line = sprintf("window %d %s %.0f", k, (k % 2) ? "ALL " : "NONE", w[k])
      if (k % 2) {
        nb = 0; c = 0
        if (k > 1) { nb += w[k - 1]; c++ }
        if (k < n) { nb += w[k + 1]; c++ }
        if (c) line = line sprintf("  ALL/NONE %.3f", w[k] / (nb / c))
      }
      print line
    }
  }' "$out"
