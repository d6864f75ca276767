#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project; pass "dev" for test dependencies.
# With uv on the PATH it installs with uv (several times faster than pip); otherwise with pip.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
TARGET="."
[ "${1:-}" = "dev" ] && TARGET=".[dev]"
if command -v uv >/dev/null 2>&1; then
  [ -x .venv/bin/python ] || uv venv --quiet --python "$PYTHON" .venv
  uv pip install --quiet --python .venv/bin/python -e "$TARGET"
  exit 0
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
# Editable installs from pyproject.toml need pip 21.3+; upgrading a recent pip only costs time.
.venv/bin/python -c 'import pip, sys; sys.exit(int(pip.__version__.split(".")[0]) < 22)' ||
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e "$TARGET"
