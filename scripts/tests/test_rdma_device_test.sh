#!/usr/bin/env bash
# scripts/rdma-device-test on machines it cannot use, and its plan on one it
# can: each refusal exits 77 (not 1, a failed test) and says what is
# missing, before building anything; a device with an ACTIVE port gets the
# whole plan (--dry-run). Detection looks at a fake sysfs and /dev
# (STRATA_RDMA_SYSFS, STRATA_RDMA_DEV_DIR, STRATA_NET_SYSFS); id, ip, rdma
# and modprobe are stand-ins first on PATH, so nothing touches the
# machine's kernel. Prints "N passed, N failed".
set -u
here=$(cd "$(dirname "$0")/../.." && pwd)
script=$here/scripts/rdma-device-test
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0 out="" rc=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then
    passed=$((passed + 1)); echo "ok   $name"
  else
    failed=$((failed + 1)); echo "FAIL $name (exit $rc)"; printf '%s\n' "$out" | sed 's/^/     /'
  fi
}
has() { grep -qF -- "$1" <<<"$out"; }
refused() {  # refused TEXT...: exit 77 and every TEXT in the output
  [ "$rc" -eq 77 ] || return 1
  local t
  for t in "$@"; do has "$t" || return 1; done
}
absent() { [ ! -e "$1" ]; }

# Stand-ins: FAKE_UID for id -u; modprobe fails unless FAKE_MODPROBE_OK;
# rdma lists no links; ip gives eth9 192.0.2.7.
bin=$work/bin
mkdir -p "$bin"
cat >"$bin/id" <<'EOF'
#!/bin/sh
case "$1" in -u) echo "${FAKE_UID:-0}" ;; *) echo tester ;; esac
EOF
cat >"$bin/modprobe" <<'EOF'
#!/bin/sh
echo "modprobe $*" >>"$STUB_LOG"
echo "modprobe: FATAL: Module $1 not found in directory /lib/modules/test" >&2
exit 1
EOF
cat >"$bin/rdma" <<'EOF'
#!/bin/sh
echo "rdma $*" >>"$STUB_LOG"
EOF
cat >"$bin/ip" <<'EOF'
#!/bin/sh
echo "2: eth9    inet 192.0.2.7/24 brd 192.0.2.255 scope global eth9"
EOF
chmod +x "$bin"/*
export STUB_LOG=$work/stub.log
: >"$STUB_LOG"

# A fake machine: sysfs with no device, a /dev/infiniband, one interface.
fake=$work/machine
mkdir -p "$fake/ib" "$fake/dev" "$fake/net/eth9"
export STRATA_RDMA_SYSFS=$fake/ib STRATA_RDMA_DEV_DIR=$fake/dev STRATA_NET_SYSFS=$fake/net
results=$work/results
run() { out=$(PATH="$bin:$PATH" "$script" --results "$results" --build-dir "$work/build" "$@" 2>&1); rc=$?; }

run
check "no device: exit 77, not a test failure" [ "$rc" -eq 77 ]
check "no device: says there is none and where it looked" has "no RDMA device ($fake/ib is empty or missing"
check "no device: says how to get one (Soft-RoCE, root)" has "--soft-roce IFACE (needs the rdma_rxe kernel module and root)"
check "no device: nothing was built" absent "$work/build"
check "no device: no results folder was made" absent "$results"

run --soft-roce eth0
check "--soft-roce on a missing interface: 77, names the ones there are" \
  refused "no such network interface" "interfaces here: eth9"

FAKE_UID=1000 run --soft-roce eth9
check "--soft-roce without root: 77, says it needs root" [ "$rc" -eq 77 ]
check "--soft-roce without root: says what to run instead" has "run: sudo $script --soft-roce eth9"
check "--soft-roce without root: no modprobe tried" [ ! -s "$STUB_LOG" ]

run --soft-roce eth9
check "--soft-roce, kernel without rdma_rxe: 77, names the module" \
  refused "modprobe rdma_rxe failed: this kernel has no Soft-RoCE module"
check "--soft-roce, kernel without rdma_rxe: no link was added" bash -c "! grep -q 'link add' $STUB_LOG"

: >"$STUB_LOG"
run --soft-roce eth9 --dry-run
check "--soft-roce --dry-run: exit 0, shows the commands it would run" \
  bash -c "[ $rc -eq 0 ] && grep -q 'rdma link add rxe_eth9 type rxe netdev eth9' <<<\"\$1\"" _ "$out"
check "--soft-roce --dry-run: rdma:// on the interface's address" has "rdma:// on 192.0.2.7"
check "--soft-roce --dry-run: no modprobe, no link added" bash -c "! grep -Eq 'modprobe|link add' $STUB_LOG"

# A device whose only port is down.
mkdir -p "$fake/ib/mlx5_0/ports/1/gid_attrs/ndevs"
echo "1: DOWN" >"$fake/ib/mlx5_0/ports/1/state"
echo Ethernet >"$fake/ib/mlx5_0/ports/1/link_layer"
echo eth9 >"$fake/ib/mlx5_0/ports/1/gid_attrs/ndevs/0"
run
check "device with no ACTIVE port: 77, shows the port's state" \
  refused "no RDMA port is ACTIVE (mlx5_0/1: DOWN)"

echo "4: ACTIVE" >"$fake/ib/mlx5_0/ports/1/state"
run
check "device without /dev/infiniband/uverbs*: 77, says to load ib_uverbs" \
  refused "no $fake/dev/uverbs*" "modprobe ib_uverbs rdma_ucm"

run --device mlx4_9
check "--device that does not exist: 77, lists the devices" \
  refused "devices here: mlx5_0"

touch "$fake/dev/uverbs0" "$fake/dev/rdma_cm"
run --dry-run
check "usable device, --dry-run: exit 0" [ "$rc" -eq 0 ]
check "usable device: finds the port, its netdev and address" has "RDMA device mlx5_0 port 1: ACTIVE, link layer Ethernet, netdev eth9; rdma:// on 192.0.2.7"
check "the plan builds standalone in the named build folder" has "-B $work/build"
check "the plan builds the components only" has "-DSTRATA_WITH_SERVER=OFF"
check "the plan runs the device test" has "rdma_tests --gtest_filter=VerbsDevice."
check "the plan runs logserviced over rdma:// on the device's address" has "logserviced x3 over rdma://192.0.2.7"
check "the plan runs the transport benchmark" has "$work/build/rdma/rdma_bench"
check "the plan runs the log service's benchmark" has "replication_transport_bench --seconds"
check "the summary lists what is not covered over real verbs" has "not covered over real verbs (each needs a code change):"

run --tcp-only --device mlx5_0
check "usage errors exit 2" [ "$rc" -eq 2 ]

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
