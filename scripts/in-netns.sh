#!/usr/bin/env bash
# Runs a command inside a new network namespace that holds nothing but loopback, so that no
# packet it sends (zenoh scouting's multicast above all) can leave the machine:
#   lo up, multicast on, and 224.0.0.0/4 routed to lo from 127.0.0.1.
# The command and every process it starts (zest, nats-server, the pico programs) share that
# namespace, and the namespace dies with them. Needs root or CAP_SYS_ADMIN (`unshare -n`).
#
#   scripts/in-netns.sh <command> [args...]
#
# Already inside a loopback-only namespace, it runs the command as it is. Exits 77 (the
# "skipped" code of automake and friends) with one line on stderr where `unshare -n` is not
# permitted, so callers can tell "cannot isolate here" from a failing command.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 <command> [args...]" >&2
  exit 2
fi

# /proc/net/dev lists the interfaces of the reader's own namespace (unlike /sys/class/net,
# which shows the namespace sysfs was mounted in).
only_lo() {
  [ "$(awk -F: 'NR > 2 { gsub(/ /, "", $1); print $1 }' /proc/net/dev | tr '\n' ' ')" = "lo " ]
}
if only_lo; then
  exec "$@"
fi

if ! unshare -n true 2>/dev/null; then
  echo "in-netns: unshare -n is not permitted here (needs root or CAP_SYS_ADMIN)" >&2
  exit 77
fi
exec unshare -n bash -c '
  set -e
  ip link set lo up
  ip link set lo multicast on
  ip route add 224.0.0.0/4 dev lo src 127.0.0.1
  exec "$@"' in-netns "$@"
