#!/usr/bin/env bash
# The one test command: installs what the suite needs (Debian packages, npm packages), builds,
# and runs every test file. Safe to run again; already-installed parts are skipped.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v nats-server >/dev/null 2>&1 || need+=(nats-server)
command -v influxd >/dev/null 2>&1 || need+=(influxdb)
command -v chromium >/dev/null 2>&1 || need+=(chromium)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# python3 with venv and pip (Debian splits them out) for the zenoh-python venv.
if ! command -v python3 >/dev/null 2>&1; then
  need+=(python3 python3-venv)
elif ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
  need+=(python3-venv)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y --no-install-recommends "${need[@]}"
fi

# npm ci also builds dist/ (the prepare script), which the end-to-end tests run.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund
fi
# zenoh-python for test/zenoh-python/ (a venv of the project's own; skipped when already there).
# Elsewhere than CI a machine without python or PyPI still runs the rest, those tests skipping.
if ! bash scripts/zenoh-python-venv.sh && [ "${CI:-}" = "true" ]; then
  exit 1
fi
npm run build --silent
npm run lint --silent        # Biome: the recommended rules and the formatter (biome.json)
# Compiles (and so type-checks) the tests, the benchmarks and the examples, then runs every test.
node scripts/run-tests.mjs "$@"
