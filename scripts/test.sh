#!/usr/bin/env bash
# Installs test dependencies and runs the whole suite: ruff, the documentation build, then pytest.
# Debian packages the tests use (redis-server, chromium) are installed when missing and we are
# root; without them the tests that need them are skipped with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
bash scripts/bootstrap.sh dev
.venv/bin/ruff check .
.venv/bin/ruff format --check .
# The documentation site, strict: a broken link or anchor, or a page missing from the nav,
# fails. Built into a temporary folder, never into the repository.
docs_site=$(mktemp -d)
trap 'rm -rf "$docs_site"' EXIT
NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict --site-dir "$docs_site"
# One pytest worker per core (pytest-xdist; TEST_WORKERS=0 runs in this process): the suite
# waits on browsers, workers and servers much of the time, so it uses the cores. worksteal
# evens out the few tests that take a minute. Each worker keeps its own DATA_DIR
# (tests/support/parallel.py) and its own test database.
.venv/bin/python -m pytest -n "${TEST_WORKERS:-auto}" --dist worksteal "$@"
