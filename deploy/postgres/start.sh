#!/bin/sh
# Creates the cluster on the first start (its owner POSTGRES_USER with POSTGRES_PASSWORD, and
# the database POSTGRES_DB), then runs the server. Connections from other containers need the
# password (scram-sha-256); the password never appears on a command line.
set -eu
: "${POSTGRES_PASSWORD:?set POSTGRES_PASSWORD}"
user="${POSTGRES_USER:-carejury}"
database="${POSTGRES_DB:-carejury}"
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  password_file=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" > "$password_file"
  initdb --pgdata "$PGDATA" --username "$user" --pwfile "$password_file" \
    --auth-local peer --auth-host scram-sha-256 --encoding UTF8 --locale C.UTF-8
  rm -f "$password_file"
  echo "CREATE DATABASE \"$database\" OWNER \"$user\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  echo "host all all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
  echo "listen_addresses = '*'" >> "$PGDATA/postgresql.conf"
fi
exec postgres -D "$PGDATA"
