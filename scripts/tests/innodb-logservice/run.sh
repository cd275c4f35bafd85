#!/usr/bin/env bash
# Runs the upstream innodb selection (selection.list minus exclusions.list)
# with the redo in three log-service nodes that each mysqld runs itself
# (innodb_log_service_local_nodes=3), at bootstrap (mtr's --initialize=) and
# at every server start (--mysqld=), and prints pass/fail/skip counts and the
# pass percentage. See README.md in this directory.
#
#   scripts/tests/innodb-logservice/run.sh [mtr options...]
#   VARDIR=/tmp/x PORT_BASE=15000 PARALLEL=2 scripts/tests/innodb-logservice/run.sh
#   ... run.sh --no-exclusions        run the excluded tests too
#   ... run.sh innodb.foo innodb.bar  run only these (still with the nodes)
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../.." && pwd)
mtr_dir=$root/.build/fork/build/mysql-test
vardir=${VARDIR:-/tmp/innodb-logservice-var}
port_base=${PORT_BASE:-15000}
parallel=${PARALLEL:-2}
[ -x "$mtr_dir/mtr" ] || { echo "no fork build: scripts/build-server fork" >&2; exit 2; }
[ -x "$root/.build/fork/build/runtime_output_directory/logserviced" ] ||
  { echo "logserviced was not built next to mysqld" >&2; exit 2; }

use_exclusions=1
tests=()
extra=()
for a in "$@"; do
  case "$a" in
    --no-exclusions) use_exclusions=0 ;;
    innodb.*) tests+=("$a") ;;
    *) extra+=("$a") ;;
  esac
done
strip() { sed -e 's/#.*//' -e 's/[[:space:]]*$//' -e '/^$/d' "$1" | awk '{print $1}'; }
if [ ${#tests[@]} -eq 0 ]; then
  mapfile -t tests < <(strip "$here/selection.list")
fi
excluded=()
if [ $use_exclusions = 1 ]; then
  mapfile -t excluded < <(strip "$here/exclusions.list")
fi
run=()
for t in "${tests[@]}"; do
  skip=0
  for x in "${excluded[@]}"; do [ "$t" = "$x" ] && skip=1; done
  [ $skip = 0 ] && run+=("$t")
done
echo "selection: ${#tests[@]} tests, excluded: $(( ${#tests[@]} - ${#run[@]} )), running: ${#run[@]}"

opt=--innodb-log-service-local-nodes=3
log=$vardir.log
rm -rf "$vardir"
start=$(date -u +%s)
(cd "$mtr_dir" && ./mtr --vardir="$vardir" --port-base="$port_base" --parallel="$parallel" \
   --force --max-test-fail=0 --retry=0 --testcase-timeout=15 \
   "--initialize=$opt" "--mysqld=$opt" "${extra[@]}" "${run[@]}") >"$log" 2>&1
rc=$?
secs=$(( $(date -u +%s) - start ))

# One line per test: "[ nn%] innodb.name ... [ pass ]" (mtr's own report).
results=$(grep -E '^\[ *[0-9]+%\] innodb\.' "$log" | sed -E 's/^\[ *[0-9]+%\] ([^ ]+) .*\[ (pass|fail|skipped|disabled) \].*/\1 \2/' |
          awk 'NF==2' | sort -u -k1,1)
pass=$(grep -c ' pass$' <<<"$results")
fail=$(grep -c ' fail$' <<<"$results")
skipped=$(grep -cE ' (skipped|disabled)$' <<<"$results")
ran=$(( pass + fail ))
echo "mtr exit $rc after ${secs}s; log: $log"
echo "passed $pass, failed $fail, skipped $skipped (of ${#run[@]} run)"
if [ "$ran" -gt 0 ]; then
  awk -v p="$pass" -v r="$ran" 'BEGIN { printf "pass rate of the tests that ran: %.1f%% (%d/%d)\n", 100*p/r, p, r }'
fi
sel=${#tests[@]}
if [ "$sel" -gt 0 ]; then
  awk -v p="$pass" -v s="$sel" 'BEGIN { printf "pass rate of the whole selection (excluded and skipped count as not passed): %.1f%% (%d/%d)\n", 100*p/s, p, s }'
fi
grep ' fail$' <<<"$results" | sed 's/^/FAILED: /'
grep -E ' (skipped|disabled)$' <<<"$results" | sed 's/^/SKIPPED: /'
# Evidence that the servers ran on the nodes: their own error logs.
started=$(cat "$vardir"/*/log/mysqld.1.err "$vardir"/log/mysqld.1.err 2>/dev/null | grep -c 'log service: started 3 local nodes')
recovered=$(cat "$vardir"/*/log/mysqld.1.err "$vardir"/log/mysqld.1.err 2>/dev/null | grep -c 'of log service volume')
echo "server starts on local nodes (error logs): $started; starts that read the checkpoint from the nodes: $recovered"
exit $rc
