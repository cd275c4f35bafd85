#!/usr/bin/env bash
# .ci/run's time limit: a test command that overruns is stopped with all its
# children, the stage it was in is named, and the closing line still comes
# with the overrun as a failure. Runs .ci/run in a scratch repo whose
# scripts/test is a stand-in. Prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0
# shellcheck disable=SC2001 # sed indents every line of the output; ${var//} cannot anchor at each line
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); echo "ok   $name"; else failed=$((failed + 1)); echo "FAIL $name"; echo "$out" | sed 's/^/     /'; fi
}
mkdir -p "$work/.ci" "$work/scripts" "$work/.build"
cp "$here/.ci/run" "$work/.ci/run"
cat >"$work/scripts/test" <<'STANDIN'
#!/usr/bin/env bash
printf 'tier 2: upstream innodb selection on the log service\n40 2 3\n' >.build/test-progress
sleep 300 &
echo $! >.build/child.pid
wait
STANDIN
chmod +x "$work/scripts/test"

start=$SECONDS
out=$(STRATA_CI_BUDGET_S=2 bash "$work/.ci/run" 2>&1); rc=$?
check "an overrun fails the run" [ $rc -ne 0 ]
check "it stops within the limit (not the 300 s the command wanted)" [ $((SECONDS - start)) -lt 30 ]
check "it names the stage that was running" grep -q "time limit of 2 s reached during stage: tier 2: upstream innodb selection on the log service" <<<"$out"
check "the closing line keeps the counts and adds the overrun" [ "$(tail -1 <<<"$out")" = "40 passed, 3 failed, 3 skipped" ]
child=$(cat "$work/.build/child.pid")
# A zombie has exited too: it waits only for PID 1 to reap it, which some
# containers' PID 1 does late.
check "the command's children are stopped too" bash -c "! kill -0 $child 2>/dev/null || ps -o stat= -p $child | grep -q '^Z'"

cat >"$work/scripts/test" <<'STANDIN'
#!/usr/bin/env bash
echo "5 passed, 0 failed, 0 skipped"
STANDIN
out=$(STRATA_CI_BUDGET_S=20 bash "$work/.ci/run" 2>&1); rc=$?
check "a run inside the limit passes through" test "$rc" -eq 0 -a "$out" = "5 passed, 0 failed, 0 skipped"
echo "$passed passed, $failed failed"
[ $failed -eq 0 ]
