#!/usr/bin/env bash
# `npm run test:rust`: zenoh-rust against zest. Builds interop/rust (the project's own crate on the
# `zenoh` crate, pinned to the eclipse-zenoh wheel's version; Cargo.lock committed) into
# $ZEST_CARGO_TARGET (default ~/.cache/zest-cargo, outside the clone, so a machine builds it
# once: the first build takes tens of minutes on two cores), then, inside a loopback-only network
# namespace (scripts/in-netns.sh), starts a fresh zest (zenoh door on a free loopback port, no
# scouting, a memory storage on demo/**) and runs the crate's checks against it, client and peer
# mode. Exits non-zero when any check fails. `.ci/run` (npm test) does not run it.
#
#   npm run test:rust [-- client|peer ...]
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${ZEST_CARGO_TARGET:-$HOME/.cache/zest-cargo}
CHECKS="$CARGO_TARGET_DIR/release/zest-rust-checks"

if [ "${1:-}" = "--in-netns" ]; then
  shift
  log=$(mktemp)
  node dist/cli.js -l tcp/127.0.0.1:0 --no-multicast-scouting --rest-http-port 127.0.0.1:0 \
    --cfg 'plugins/storage_manager/storages/demo:{key_expr:"demo/**",volume:"memory"}' 2>"$log" &
  zest=$!
  trap 'kill "$zest" 2>/dev/null || true; wait "$zest" 2>/dev/null || true; rm -f "$log"' EXIT
  endpoint=""
  for _ in $(seq 150); do
    endpoint=$(grep -oE 'zenoh tcp/[0-9.]+:[0-9]+' "$log" | head -1 | cut -d' ' -f2 || true)
    [ -n "$endpoint" ] && break
    kill -0 "$zest" 2>/dev/null || { cat "$log" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$endpoint" ] || { echo "test:rust: zest printed no zenoh locator" >&2; cat "$log" >&2; exit 1; }
  echo "zest at $endpoint (pid $zest)"
  RUST_LOG=${RUST_LOG:-error} "$CHECKS" "$endpoint" "$@"
  exit
fi

if ! command -v cargo >/dev/null 2>&1; then
  echo "test:rust needs cargo and rustc (https://rustup.rs)" >&2
  exit 1
fi
[ -f dist/cli.js ] || npm run build --silent
start=$(date +%s)
nice -n "${ZEST_CARGO_NICE:-10}" cargo build --release --locked --manifest-path interop/rust/Cargo.toml
echo "interop/rust built in $(($(date +%s) - start)) s (target $CARGO_TARGET_DIR)"
exec bash scripts/in-netns.sh bash "$0" --in-netns "$@"
