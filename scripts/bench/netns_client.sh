#!/usr/bin/env bash
# A stand-in client machine for checking `strata-bench --client-ssh` on one
# machine: a network namespace with its own address, reached over a veth pair,
# with an sshd of its own in it. It shares this machine's CPUs and files, so it
# checks the mechanics (addresses, account, ssh, clean-up), not the numbers.
#
#   scripts/bench/netns_client.sh up     # prints the STRATA_BENCH_SSH and destination to use
#   scripts/bench/netns_client.sh down
#
# Root only; needs ip, ssh-keygen and sshd (scripts/setup --bench installs them). Nothing
# outside $DIR is touched: own host key, own authorized key, own ssh config.
set -euo pipefail
NS=strata-client
DIR=/tmp/strata-netns
HOST_IP=10.77.0.1 CLIENT_IP=10.77.0.2

down() {
  if [ -f "$DIR/sshd.pid" ]; then kill "$(cat "$DIR/sshd.pid")" 2>/dev/null || true; fi
  ip netns del "$NS" 2>/dev/null || true
  ip link del strata-srv 2>/dev/null || true
  rm -rf "$DIR"
}

up() {
  for p in ip ssh-keygen /usr/sbin/sshd; do
    command -v "$p" >/dev/null || { echo "error: ${p##*/} is not installed here; scripts/setup --bench installs it" >&2; exit 1; }
  done
  down
  mkdir -p "$DIR" /run/sshd
  chmod 700 "$DIR"
  ip netns add "$NS"
  ip link add strata-srv type veth peer name strata-cli
  ip link set strata-cli netns "$NS"
  ip addr add "$HOST_IP/30" dev strata-srv
  ip link set strata-srv up
  ip netns exec "$NS" ip addr add "$CLIENT_IP/30" dev strata-cli
  ip netns exec "$NS" ip link set strata-cli up
  ip netns exec "$NS" ip link set lo up
  ssh-keygen -q -t ed25519 -N '' -f "$DIR/host_key"
  ssh-keygen -q -t ed25519 -N '' -f "$DIR/client_key"
  cp "$DIR/client_key.pub" "$DIR/authorized_keys"
  ip netns exec "$NS" /usr/sbin/sshd -h "$DIR/host_key" -o "PidFile=$DIR/sshd.pid" \
    -o "AuthorizedKeysFile=$DIR/authorized_keys" -o PermitRootLogin=prohibit-password \
    -o StrictModes=no -o "ListenAddress=$CLIENT_IP"
  printf '%s %s\n' "$CLIENT_IP" "$(cut -d' ' -f1,2 "$DIR/host_key.pub")" > "$DIR/known_hosts"
  printf 'Host %s\n  User root\n  IdentityFile %s\n  IdentitiesOnly yes\n  UserKnownHostsFile %s\n' \
    "$CLIENT_IP" "$DIR/client_key" "$DIR/known_hosts" > "$DIR/ssh_config"
  echo "export STRATA_BENCH_SSH='ssh -F $DIR/ssh_config'; destination: $CLIENT_IP (servers listen on $HOST_IP)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
