#!/usr/bin/env bash
# Creates .venv (Python 3.11+) and installs the project; pass "dev" for test dependencies.
# Installs with uv, several times faster than pip (a newcomer's first minute is mostly this):
# the uv on the PATH, else one put into .venv by pip (a single wheel, seconds). Falls back to
# pip when uv cannot be had or fails.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required")'
TARGET="."
[ "${1:-}" = "dev" ] && TARGET=".[dev]"
pip_quiet() { .venv/bin/python -m pip install --quiet --disable-pip-version-check "$@"; }

[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv
UV=$(command -v uv || true)
if [ -z "$UV" ]; then
  [ -x .venv/bin/uv ] || pip_quiet uv 2>/dev/null || true
  [ -x .venv/bin/uv ] && UV=.venv/bin/uv
fi
# The sign-on tests' OpenID provider (tests/oidc): an npm package, installed from its lockfile
# when npm is here (the tests skip without it), and again only when the lockfile changed.
oidc_provider() {
  [ "${1:-}" = "dev" ] && command -v npm >/dev/null || return 0
  local stamp=tests/oidc/node_modules/.installed-from-lock
  cmp -s tests/oidc/package-lock.json "$stamp" 2>/dev/null && return 0
  if (cd tests/oidc && npm ci --silent --no-audit --no-fund); then
    cp tests/oidc/package-lock.json "$stamp"
  else
    echo "npm ci in tests/oidc failed; the sign-on tests will be skipped" >&2
  fi
}

if [ -n "$UV" ] && "$UV" pip install --quiet --python .venv/bin/python -e "$TARGET"; then
  oidc_provider "${1:-}"
  exit 0
fi
echo "uv is not available or failed; installing with pip (slower)" >&2
# Editable installs from pyproject.toml need pip 21.3+; upgrading a recent pip only costs time.
.venv/bin/python -c 'import pip, sys; sys.exit(int(pip.__version__.split(".")[0]) < 22)' ||
  pip_quiet --upgrade pip
pip_quiet -e "$TARGET"
oidc_provider "${1:-}"
