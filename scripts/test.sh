#!/usr/bin/env bash
# Installs test dependencies and runs the whole suite: ruff, the documentation build, then pytest.
# Debian packages the tests use (redis-server, chromium, nodejs and npm) are installed when
# missing and we are root; without them the tests that need them are skipped with a reason.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v chromium >/dev/null || need+=(chromium)
command -v npm >/dev/null || need+=(nodejs npm)  # the sign-on tests' OpenID provider
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
# The tests are spread over pytest-xdist workers, one per core up to four (TEST_WORKERS=N sets
# the number, 0 runs them in this one process); each worker keeps its own DATA_DIR
# (tests/support/parallel.py) and test database. On a two-core machine two workers finish the
# suite in a little over half the time of one: most of a test's time is one Python process's
# CPU, so one process left the second core mostly idle.
# --durations: the slowest tests close the output, so a slow run says where its time went.
# One core: the tests run in this process (-n 0), with no worker to start.
cores=$(nproc 2>/dev/null || echo 1)
workers=$(( cores < 2 ? 0 : (cores < 4 ? cores : 4) ))
.venv/bin/python -m pytest -n "${TEST_WORKERS:-$workers}" --dist worksteal \
  --durations=25 "$@"
