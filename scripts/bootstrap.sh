#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project; pass "dev" for test dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
.venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
if [ "${1:-}" = "dev" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
else
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e .
fi
