#!/usr/bin/env bash
# Installs the project and starts the demo site on the embedded default (SQLite, folder queue,
# offline scripted provider). Prints the URL and the demo logins.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
exec .venv/bin/python manage.py demo --serve "$@"
