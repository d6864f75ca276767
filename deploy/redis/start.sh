#!/bin/sh
# Redis with a password (REDIS_PASSWORD) and an append-only file in /data, so queued messages
# survive a restart. The password goes through a file readable by this user only, not argv.
set -eu
: "${REDIS_PASSWORD:?set REDIS_PASSWORD}"
umask 077
config=$(mktemp)
cat > "$config" <<CONF
bind 0.0.0.0
port 6379
protected-mode no
dir /data
appendonly yes
requirepass $REDIS_PASSWORD
CONF
exec redis-server "$config"
