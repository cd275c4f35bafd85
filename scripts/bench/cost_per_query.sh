#!/bin/bash
# Cost per query of one sysbench run against a running server, over a window
# of sysbench's own report seconds (its clock starts once every thread is
# connected, so connection storms at 2,048 threads stay out of the window):
#   - mysqld CPU per query (utime + stime of the process)
#   - sysbench CPU per query (the client shares the machine's CPUs)
#   - mysqld context switches per query, voluntary and not (sum over its threads)
# Less sensitive to other load on the machine than QPS. See
# docs/benchmarks/thread-pool-2026-11-23.md for how it is read.
#
#   scripts/bench/cost_per_query.sh PORT MYSQLD_PID SCRIPT THREADS WARM SECS [TABLES ROWS]
#   e.g. scripts/bench/cost_per_query.sh 13307 $(cat mysqld.pid) oltp_point_select 2048 5 15
#   SB_ARGS="--db-ps-mode=disable" adds sysbench arguments; SB_PREFIX="taskset -c 1"
#   runs sysbench under a command that execs it (the PID stays sysbench's).
set -eu
# shellcheck disable=SC2043 # a list of one: every bench script names its tools in this shape, which test_tools.py reads
for p in sysbench; do  # scripts/bench/tools.py: what installs each
  command -v "$p" >/dev/null || { echo "error: $p is not installed here; scripts/setup --bench installs it" >&2; exit 1; }
done
port=$1 pid=$2 script=$3 threads=$4 warm=$5 secs=$6 tables=${7:-10} rows=${8:-25000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
# Threads of an earlier run's connections still exiting would make the sums go back.
while [ "$(find "/proc/$pid/task" -mindepth 1 -maxdepth 1 | wc -l)" -gt $((threads / 4 + 300)) ]; do sleep 1; done
extra=""
[ "$script" = oltp_point_select ] && extra="--skip_trx=on"
# shellcheck disable=SC2086
${SB_PREFIX:-} sysbench "$script" --db-driver=mysql --mysql-host=127.0.0.1 --mysql-port="$port" --mysql-user=root \
  --mysql-db=sbtest --tables="$tables" --table-size="$rows" --threads="$threads" \
  --time=$((warm + secs + 2)) --report-interval=1 $extra ${SB_ARGS:-} run >"$out" 2>&1 &
sb=$!
lines() { grep -c '^\[' "$out" || true; }
switches() { awk '/^voluntary_ctxt_switches/{v+=$2}/^nonvoluntary_ctxt_switches/{n+=$2}END{print v+0, n+0}' "/proc/$pid/task/"*/status 2>/dev/null; }
snap() { echo "$(awk '{print $14+$15}' "/proc/$pid/stat") $(awk '{print $14+$15}' "/proc/$sb/stat") $(awk '/^cpu /{print $2+$3+$4+$7+$8+$9, $5+$6}' /proc/stat) $(switches)"; }
while [ "$(lines)" -lt "$warm" ]; do kill -0 $sb 2>/dev/null || { cat "$out" >&2; exit 1; }; sleep 0.2; done
read -r m0 b0 a0 i0 v0 n0 < <(snap)
while [ "$(lines)" -lt $((warm + secs)) ]; do sleep 0.2; done
read -r m1 b1 a1 i1 v1 n1 < <(snap)
wait $sb || { cat "$out" >&2; exit 1; }
q=$(awk -v w="$warm" -v e=$((warm + secs)) '/^\[/{n++; if (n > w && n <= e) for (i = 1; i <= NF; i++) if ($i == "qps:") s += $(i + 1)} END{print int(s)}' "$out")
hz=$(getconf CLK_TCK)
awk -v q="$q" -v m=$((m1 - m0)) -v b=$((b1 - b0)) -v a=$((a1 - a0)) -v i=$((i1 - i0)) -v v=$((v1 - v0)) -v n=$((n1 - n0)) \
  -v secs="$secs" -v hz="$hz" -v s="$script" -v t="$threads" 'BEGIN{
  printf "%s threads=%s qps=%.0f mysqld_us/q=%.1f sysbench_us/q=%.1f mysqld_cpus=%.2f sysbench_cpus=%.2f machine_busy=%.0f%% mysqld_vcs/q=%.2f mysqld_nvcs/q=%.2f\n",
    s, t, q / secs, m / hz / q * 1e6, b / hz / q * 1e6, m / hz / secs, b / hz / secs, 100 * a / (a + i), v / q, n / q }'
