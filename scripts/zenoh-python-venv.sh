#!/usr/bin/env bash
# Installs zenoh-python (test/zenoh-python/requirements.txt, pinned) into .venv-zenoh/ at the
# repository root, for the tests in test/zenoh-python/. Does nothing when the venv exists and was
# made from the same requirements (a copy is kept inside it), so a rerun costs milliseconds.
# Without python3 or PyPI it says so in one line and exits 1; scripts/test.sh then goes on
# (the tests skip) except under CI, where the tests must run.
set -euo pipefail
cd "$(dirname "$0")/.."
REQ=test/zenoh-python/requirements.txt
VENV=.venv-zenoh
if [ -x "$VENV/bin/python" ] && cmp -s "$REQ" "$VENV/requirements.txt"; then
  exit 0
fi
PY=${PYTHON:-python3}
if ! command -v "$PY" >/dev/null 2>&1; then
  echo "zenoh-python: no $PY found; the zenoh-python tests will not run" >&2
  exit 1
fi
echo "installing zenoh-python into $VENV ($(grep -v '^#' "$REQ" | tr '\n' ' '))"
rm -rf "$VENV"
if ! "$PY" -m venv "$VENV" ||
  ! "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input -r "$REQ"; then
  rm -rf "$VENV"
  echo "zenoh-python: could not install $REQ into $VENV; the zenoh-python tests will not run" >&2
  exit 1
fi
# Written last: a venv without it is an interrupted install, made again next time.
cp "$REQ" "$VENV/requirements.txt"
